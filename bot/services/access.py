"""Who may do what: requesters, approvers and admins, with Slack user groups resolved on demand.

Decisions (approve, deny, release, retry, cancel by an admin) and submissions read user-group
membership fresh from Slack every time, so removing a manager from a group takes effect on the
very next click. Only what is merely shown (``status``, ``list``, the form's namespace list, the
audit trail) may use the directory's short cache: pass ``fresh=False``.
"""

from __future__ import annotations

from bot.domain.policy import People, Policy, ShiftApproval, Team
from bot.services.ports import Directory
from bot.services.refusals import AdminsDecideShifts, NotAShiftApprover, Refusal, ShiftNeedsApproverOf


class Access:
    def __init__(self, policy: Policy, directory: Directory) -> None:
        self._policy = policy
        self._directory = directory

    def includes(self, people: People, user_id: str, *, fresh: bool = True) -> bool:
        if user_id in people.users:
            return True
        return any(user_id in self._directory.usergroup_members(group, fresh=fresh) for group in sorted(people.usergroups))

    def is_admin(self, user_id: str, *, fresh: bool = True) -> bool:
        return self.includes(self._policy.admins, user_id, fresh=fresh)

    def may_decide(self, user_id: str, team: Team, *, fresh: bool = True) -> bool:
        return self.includes(team.approvers, user_id, fresh=fresh) or self.is_admin(user_id, fresh=fresh)

    def shift_decision_problem(
        self, user_id: str, teams: tuple[Team, Team], *, approved_by: list[str], fresh: bool = True
    ) -> Refusal | None:
        """Why ``user_id`` may not approve a shift between ``teams`` (source, target) now; None: they may.

        ``shifts.approval: admin``: one admin decides. ``each_team``: one approver of each team, so a
        second approval must come from an approver of the team not yet covered.
        """
        if self._policy.shifts.approval == ShiftApproval.ADMIN:
            return None if self.is_admin(user_id, fresh=fresh) else AdminsDecideShifts()
        mine = {team.name for team in teams if self.may_decide(user_id, team, fresh=fresh)}
        if not mine:
            return NotAShiftApprover(teams[0].label, teams[1].label)
        uncovered = [team for team in teams if not any(self.may_decide(other, team, fresh=fresh) for other in approved_by)]
        if approved_by and uncovered and not mine & {team.name for team in uncovered}:
            return ShiftNeedsApproverOf(uncovered[0].label)
        return None

    def may_request(self, user_id: str, team: Team, *, fresh: bool = True) -> bool:
        return (
            team.members.empty or self.includes(team.members, user_id, fresh=fresh) or self.may_decide(user_id, team, fresh=fresh)
        )

    def belongs_to(self, user_id: str, team: Team, *, fresh: bool = True) -> bool:
        """Named in the team (member, approver or owner), not merely allowed as an admin."""
        return any(self.includes(people, user_id, fresh=fresh) for people in (team.members, team.approvers, team.owners))

    def requestable_namespaces(self, user_id: str) -> list[str]:
        """For the request form's list (display); submitting checks again, fresh."""
        return sorted(
            ns.name
            for team in self._policy.teams.values()
            if self.may_request(user_id, team, fresh=False)
            for ns in team.namespaces
        )

    def teams_of(self, user_id: str) -> list[Team]:
        """The user's own teams (display); an admin who belongs to none sees every team."""
        teams = [team for team in self._policy.teams.values() if self.belongs_to(user_id, team, fresh=False)]
        if not teams and self.is_admin(user_id, fresh=False):
            return list(self._policy.teams.values())
        return teams
