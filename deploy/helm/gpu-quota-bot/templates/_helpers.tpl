{{- define "gpu-quota-bot.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpu-quota-bot.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "gpu-quota-bot.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "gpu-quota-bot.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gpu-quota-bot.labels" -}}
app.kubernetes.io/name: {{ include "gpu-quota-bot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "gpu-quota-bot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-quota-bot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpu-quota-bot.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gpu-quota-bot.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "gpu-quota-bot.secretName" -}}
{{- required "secret.name is required" .Values.secret.name -}}
{{- end -}}

{{- define "gpu-quota-bot.policyConfigMap" -}}
{{- default (printf "%s-policy" (include "gpu-quota-bot.fullname" .)) .Values.existingPolicyConfigMap -}}
{{- end -}}

{{/* The managed namespaces: managedNamespaces with an existing policy ConfigMap (the chart cannot read
it), else those of the inline policy, whose entries are names or {name: ...}. */}}
{{- define "gpu-quota-bot.namespaces" -}}
{{- $names := list -}}
{{- if .Values.existingPolicyConfigMap -}}
{{- $names = .Values.managedNamespaces -}}
{{- else -}}
{{- range $team := .Values.policy.teams -}}
{{- range $entry := $team.namespaces -}}
{{- if kindIs "string" $entry -}}
{{- $names = append $names $entry -}}
{{- else -}}
{{- $names = append $names $entry.name -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $names | uniq | sortAlpha | toJson -}}
{{- end -}}

{{/* The Kueue ClusterQueues the bot reads and patches: managedClusterQueues with an existing policy
ConfigMap, else the cluster_queue names of the inline policy's resource entries (names or mappings). A
namespace's resources replace its team's, as in the bot, so a team's queue counts only where a namespace
does not set its own. */}}
{{- define "gpu-quota-bot.clusterQueues" -}}
{{- $names := list -}}
{{- if .Values.existingPolicyConfigMap -}}
{{- $names = .Values.managedClusterQueues -}}
{{- else -}}
{{- range $team := .Values.policy.teams -}}
{{- range $namespace := $team.namespaces -}}
{{- $resources := $team.resources -}}
{{- if kindIs "map" $namespace -}}
{{- if $namespace.resources -}}
{{- $resources = $namespace.resources -}}
{{- end -}}
{{- end -}}
{{- range $resource := $resources -}}
{{- if kindIs "map" $resource -}}
{{- with $resource.cluster_queue -}}
{{- $names = append $names (required "a resource's cluster_queue needs a name" .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $names | uniq | sortAlpha | toJson -}}
{{- end -}}

{{/* "true" when the bot reads Kueue Workloads (the blocked-workload alerts): kueue.enabled, or a
ClusterQueue named in the policy (it keeps quota in Kueue, so Kueue runs). */}}
{{- define "gpu-quota-bot.kueueWorkloads" -}}
{{- if or .Values.kueue.enabled (include "gpu-quota-bot.clusterQueues" . | fromJsonArray) -}}
true
{{- end -}}
{{- end -}}

{{/* The reads in the managed namespaces: in each one's Role, or cluster-wide with clusterWideWrites. */}}
{{- define "gpu-quota-bot.namespacedReadRules" -}}
- apiGroups: [""]
  resources: [pods]
  verbs: [get]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get]
- apiGroups: [apps]
  resources: [deployments, statefulsets]
  verbs: [get]
{{- if include "gpu-quota-bot.kueueWorkloads" . }}
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [get, list]
{{- end }}
{{- end -}}

{{/* The binding of the bot's ServiceAccount to the role named .name: dict "root" $ "kind" ("Role" or
"ClusterRole") "name" the role's name, and "namespace" for a Role. */}}
{{- define "gpu-quota-bot.binding" -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ .kind }}Binding
metadata:
  name: {{ .name }}
  {{- with .namespace }}
  namespace: {{ . }}
  {{- end }}
  labels:
    {{- include "gpu-quota-bot.labels" .root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ .kind }}
  name: {{ .name }}
subjects:
  - kind: ServiceAccount
    name: {{ include "gpu-quota-bot.serviceAccountName" .root }}
    namespace: {{ .root.Release.Namespace }}
{{- end -}}

{{/* What restarts the pods when the policy in use changes: the inline policy, or the existing
ConfigMap's name, its managed namespaces and ClusterQueues (its content is not visible to the chart;
no ClusterQueues: the same checksum as before they existed). */}}
{{- define "gpu-quota-bot.policyChecksum" -}}
{{- if .Values.existingPolicyConfigMap -}}
{{- $inUse := dict "configMap" .Values.existingPolicyConfigMap "namespaces" (include "gpu-quota-bot.namespaces" . | fromJsonArray) -}}
{{- with .Values.managedClusterQueues -}}
{{- $_ := set $inUse "clusterQueues" (include "gpu-quota-bot.clusterQueues" $ | fromJsonArray) -}}
{{- end -}}
{{- $inUse | toYaml | sha256sum -}}
{{- else -}}
{{- toYaml .Values.policy | sha256sum -}}
{{- end -}}
{{- end -}}

{{/* repository:tag, and @digest when one is given (the digest pins the exact image). */}}
{{- define "gpu-quota-bot.image" -}}
{{- $reference := printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- if .Values.image.digest -}}
{{- $reference = printf "%s@%s" $reference .Values.image.digest -}}
{{- end -}}
{{- $reference -}}
{{- end -}}

{{/* The environment shared by the migration and the bot. */}}
{{- define "gpu-quota-bot.env" -}}
- name: GPU_QUOTA_CONFIG
  value: /etc/gpu-quota-bot/policy.yaml
- name: PORT
  value: {{ .Values.port | quote }}
{{- if not .Values.database.external }}
- name: DATABASE_URL
  value: sqlite:////data/gpu-quota-bot.db
{{- end }}
{{- range $name, $value := .Values.env }}
{{- if $value }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}
