"""Workspaces (admin; their members and projects also a workspace's manager): create, rename and delete
them, put members in and out, move a project between them."""

from __future__ import annotations

from vlcurate._ops import Operations, ProjectRef
from vlcurate._protocol import Call, Op
from vlcurate.errors import NotFound
from vlcurate.models_workspaces import MemberIn, MemberOut, WorkspaceOut


class WorkspaceOps(Operations):
    def _workspaces(self) -> Op[list[WorkspaceOut]]:
        reply = yield Call("GET", "/workspaces")
        return [WorkspaceOut.model_validate(w) for w in reply.json()]

    def _workspace_id(self, workspace: int | str) -> Op[int]:
        if isinstance(workspace, int):
            return workspace
        found = [w.id for w in (yield from self._workspaces()) if w.name == workspace]
        if not found:
            raise NotFound(f"No workspace named {workspace!r}.", status=404)
        return found[0]

    def _create_workspace(self, name: str) -> Op[WorkspaceOut]:
        reply = yield Call("POST", "/workspaces", json={"name": name})
        return WorkspaceOut.model_validate(reply.json())

    def _rename_workspace(self, workspace: int | str, name: str) -> Op[WorkspaceOut]:
        wid = yield from self._workspace_id(workspace)
        reply = yield Call("PATCH", f"/workspaces/{wid}", json={"name": name}, idempotent=True)
        return WorkspaceOut.model_validate(reply.json())

    def _delete_workspace(self, workspace: int | str) -> Op[None]:
        wid = yield from self._workspace_id(workspace)
        yield Call("DELETE", f"/workspaces/{wid}")

    def _members(self, workspace: int | str) -> Op[list[MemberOut]]:
        wid = yield from self._workspace_id(workspace)
        reply = yield Call("GET", f"/workspaces/{wid}/members")
        return [MemberOut.model_validate(m) for m in reply.json()]

    def _add_member(self, workspace: int | str, user: int | str, role: str, project: ProjectRef | None) -> Op[MemberOut]:
        wid = yield from self._workspace_id(workspace)
        pid = None if project is None else (yield from self._project_id(project))
        who = {"user_id": user} if isinstance(user, int) else {"username": user}
        body = MemberIn.model_validate({**who, "role": role, "project_id": pid}).model_dump(exclude_none=True)
        reply = yield Call("POST", f"/workspaces/{wid}/members", json=body, idempotent=True)  # the same role again changes nothing
        return MemberOut.model_validate(reply.json())

    def _remove_member(self, workspace: int | str, member_id: int) -> Op[None]:
        wid = yield from self._workspace_id(workspace)
        yield Call("DELETE", f"/workspaces/{wid}/members/{member_id}")

    def _move_project(self, project: ProjectRef, workspace: int | str) -> Op[None]:
        pid = yield from self._project_id(project)
        wid = yield from self._workspace_id(workspace)
        yield Call("PUT", f"/projects/{pid}/workspace", json={"workspace_id": wid}, idempotent=True)
