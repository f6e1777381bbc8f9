"""Who may do what: requesters, approvers and admins, with Slack user groups resolved on demand."""

from __future__ import annotations

from bot.domain.policy import People, Policy, Team
from bot.services.ports import Directory


class Access:
    def __init__(self, policy: Policy, directory: Directory) -> None:
        self._policy = policy
        self._directory = directory

    def includes(self, people: People, user_id: str) -> bool:
        if user_id in people.users:
            return True
        return any(user_id in self._directory.usergroup_members(group) for group in sorted(people.usergroups))

    def is_admin(self, user_id: str) -> bool:
        return self.includes(self._policy.admins, user_id)

    def may_decide(self, user_id: str, team: Team) -> bool:
        return self.includes(team.approvers, user_id) or self.is_admin(user_id)

    def may_request(self, user_id: str, team: Team) -> bool:
        return team.members.empty or self.includes(team.members, user_id) or self.may_decide(user_id, team)

    def belongs_to(self, user_id: str, team: Team) -> bool:
        """Named in the team (member, approver or owner), not merely allowed as an admin."""
        return any(self.includes(people, user_id) for people in (team.members, team.approvers, team.owners))

    def requestable_namespaces(self, user_id: str) -> list[str]:
        return sorted(
            ns.name for team in self._policy.teams.values() if self.may_request(user_id, team) for ns in team.namespaces
        )

    def teams_of(self, user_id: str) -> list[Team]:
        """The user's own teams; an admin who belongs to none sees every team."""
        teams = [team for team in self._policy.teams.values() if self.belongs_to(user_id, team)]
        if not teams and self.is_admin(user_id):
            return list(self._policy.teams.values())
        return teams
