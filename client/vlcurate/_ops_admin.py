"""Managing a server (admin): its users and their tokens, a project's settings and its deletion, and
hiding records by external id."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vlcurate import records as rec
from vlcurate._ops import Operations, ProjectRef
from vlcurate._protocol import Call, Op
from vlcurate.errors import Invalid, NotFound
from vlcurate.models import ProjectOut, ProjectSettings, ProjectUpdate, RecordsHidden, TokenOut, UserCreated, UserOut, WorkLog
from vlcurate.models_manage import MAX_IDS


class AdminOps(Operations):
    """Users, tokens, project settings and deletion, hiding records."""

    def _users(self) -> Op[list[UserOut]]:
        reply = yield Call("GET", "/users")
        return [UserOut.model_validate(u) for u in reply.json()]

    def _create_user(self, username: str, role: str, password: str, workspace: int | str | None = None,
                     member_role: str | None = None) -> Op[UserCreated]:
        body: dict[str, Any] = {"username": username, "role": role, "password": password}
        if workspace is not None:
            body["workspace_id"] = yield from self._workspace_id(workspace)  # type: ignore[attr-defined]  # WorkspaceOps has it
        if member_role is not None:
            body["member_role"] = member_role
        reply = yield Call("POST", "/users", json=body)
        return UserCreated.model_validate(reply.json())

    def _create_token(self, user: int | str, name: str = "") -> Op[TokenOut]:
        uid = yield from self._user_id(user)
        reply = yield Call("POST", f"/users/{uid}/tokens", json={"name": name})
        return TokenOut.model_validate(reply.json())

    def _revoke_token(self, token_id: int) -> Op[None]:
        yield Call("DELETE", f"/tokens/{token_id}")

    def _user_id(self, user: int | str) -> Op[int]:
        if isinstance(user, int):
            return user
        found = [u.id for u in (yield from self._users()) if u.username == user]
        if not found:
            raise NotFound(f"No user named {user!r}.", status=404)
        return found[0]

    def _update_project(self, project: ProjectRef, changes: dict[str, Any]) -> Op[ProjectSettings]:
        pid = yield from self._project_id(project)
        try:  # checked here first: the same messages as the server's, without a request
            body = ProjectUpdate.model_validate(changes).model_dump(exclude_none=True)
        except ValidationError as exc:
            raise Invalid("The project's changes are not valid.", [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()],
                          status=422) from None
        reply = yield Call("PATCH", f"/projects/{pid}", json=body, idempotent=True)  # the same values again change nothing
        return ProjectSettings.model_validate(reply.json())

    def _delete_project(self, project: ProjectRef, confirm: str) -> Op[None]:
        pid = yield from self._project_id(project)
        yield Call("DELETE", f"/projects/{pid}", params={"confirm": confirm})

    def _restore_project(self, project: ProjectRef) -> Op[ProjectOut]:
        if isinstance(project, str):  # an archived project's name: only the archived list knows it
            found = [p.id for p in (yield from self._projects(archived=True)) if p.name == project]
            if not found:
                raise NotFound(f"No archived project named {project!r}.", status=404)
            project = found[0]
        pid = project.id if isinstance(project, ProjectOut) else project
        reply = yield Call("POST", f"/projects/{pid}/restore", idempotent=False)
        return ProjectOut.model_validate(reply.json())

    def _hide_records(self, project: ProjectRef, ids: Iterable[str], reason: str = "") -> Op[RecordsHidden]:
        pid = yield from self._project_id(project)
        total = RecordsHidden(hidden=0, already=0)
        for batch in rec.batches(iter(ids), MAX_IDS):
            # Hiding what is hidden changes nothing: safe to send again.
            reply = yield Call("POST", f"/projects/{pid}/records/delete", json={"ids": batch, "reason": reason}, idempotent=True)
            done = RecordsHidden.model_validate(reply.json())
            total.hidden += done.hidden
            total.already += done.already
        return total

    def _work_log(self, workspace: int, start: date | str | None = None, end: date | str | None = None, annotator: str | None = None,
                  project: int | None = None, download: str | Path | None = None) -> Op[WorkLog]:
        """The workspace's work log; with `download` (a .csv or .parquet path) the same rows as that file too."""
        params = {k: str(v) for k, v in {"start": start, "end": end, "annotator": annotator, "project": project}.items() if v is not None}
        reply = yield Call("GET", f"/workspaces/{workspace}/worklog", params=params)
        if download is not None:
            path = Path(download)
            kind = path.suffix.lstrip(".").lower()
            if kind not in ("csv", "parquet"):
                raise ValueError(f"The work log downloads as .csv or .parquet, not {path.name!r}.")
            yield Call("GET", f"/workspaces/{workspace}/worklog.{kind}", params=params, download_to=path)
        return WorkLog.model_validate(reply.json())
