"""The Prolific stand-in's workspace: the researcher (``users/me/``), the token's one workspace with its one
project and its balance, and its participant groups (the allowlist and blocklist filters of a study name them)."""

from __future__ import annotations

from hits.prolific.standin.common import HEX_ID, Refused, iso, new_id


class Workspace:
    """Mixed into ``ProlificStandIn``: its workspace and groups (``state['groups']``), under its lock."""

    def me(self) -> dict:
        return {"id": self.state["user_id"], "email": "researcher@standin.invalid", "name": "Stand-in researcher",
                "current_project_id": self.state["project_id"], "current_workspace_id": self.state["workspace_id"],
                "currency_code": self.currency}

    def workspace(self, workspace_id: str | None = None) -> dict:
        """The token's one workspace (with its one project)."""
        if workspace_id is not None and workspace_id != self.state["workspace_id"]:
            raise Refused(404, f"No workspace with id {workspace_id!r}")
        return {"id": self.state["workspace_id"], "title": "Stand-in workspace", "currency_code": self.currency,
                "projects": [{"id": self.state["project_id"]}], "owner": self.state["user_id"]}

    def project(self, project_id: str) -> dict:
        if project_id != self.state["project_id"]:
            raise Refused(404, f"No project with id {project_id!r}")
        return {"id": project_id, "title": "Stand-in project", "workspace": self.state["workspace_id"],
                "owner": self.state["user_id"]}

    def workspace_balance(self, workspace_id: str) -> dict:
        self.workspace(workspace_id)
        return self.balance_view()

    # -- participant groups

    def _group(self, group_id: str) -> dict:
        return self._find("groups", group_id, "participant group")

    def group_view(self, group: dict) -> dict:
        view = {k: v for k, v in group.items() if k != "participants"}
        view["participant_count"] = len(group["participants"])
        return view

    def _participant_ids(self, body) -> list[str]:
        ids = body.get("participant_ids") if isinstance(body, dict) else None
        if not isinstance(ids, list) or not ids:
            raise Refused(400, {"participant_ids": ["A list of participant ids is required."]})
        bad = [i for i in ids if not isinstance(i, str) or not HEX_ID.match(i)]
        if bad:
            raise Refused(400, {"participant_ids": [f"Not Prolific ids (24 lower-case hex characters): {bad!r}"]})
        return ids

    def create_group(self, body: dict, now: float) -> dict:
        if not isinstance(body, dict) or not str(body.get("name") or "").strip():
            raise Refused(400, {"name": ["This field is required."]})
        owner = body.get("workspace_id") or body.get("project_id")
        if owner not in (self.state["workspace_id"], self.state["project_id"]):
            raise Refused(400, {"workspace_id": [f"Send the workspace_id ({self.state['workspace_id']}) or project_id "
                                                 f"({self.state['project_id']}) of the token's workspace, not {owner!r}"]})
        ids = self._participant_ids(body) if body.get("participant_ids") else []
        group = {"id": new_id(), "name": str(body["name"]), "description": str(body.get("description") or ""),
                 "workspace_id": self.state["workspace_id"], "project_id": body.get("project_id"),
                 "is_deleted": False, "created_at": iso(now), "participants": {}}
        for pid in ids:
            group["participants"].setdefault(pid, iso(now))
        self.state["groups"][group["id"]] = group
        return self.group_view(group)

    def change_members(self, group_id: str, body: dict, add: bool, now: float) -> list[dict]:
        group = self._group(group_id)
        for pid in self._participant_ids(body):
            if add:
                group["participants"].setdefault(pid, iso(now))
            else:
                group["participants"].pop(pid, None)
        return self.members(group)

    @staticmethod
    def members(group: dict) -> list[dict]:
        return [{"participant_id": pid, "datetime_created": at} for pid, at in group["participants"].items()]
