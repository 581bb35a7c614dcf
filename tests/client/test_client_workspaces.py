"""The client and workspaces against a live server: an admin makes workspaces, members and projects in
them; a member's client sees, claims and reads only their workspace's projects, and B's ids answer
NotFound as a missing project does."""

from __future__ import annotations

import pytest

from app.db import transaction
from tests import factories
from vlcurate import Client, Forbidden, NotFound

STAGES = [{"workflow": "generic.choice", "config": {"choices": ["a", "b"]}}]


@pytest.mark.committed
def test_a_members_client_sees_nothing_of_another_workspace(live_server, committed):
    with transaction(committed) as s:
        admin_token = factories.token(s, factories.user(s, "cw-admin", "admin"))
    with Client(live_server, admin_token) as admin:
        alpha, bravo = admin.create_workspace("Alpha"), admin.create_workspace("Bravo")
        a = admin.create_project("alpha-proj", STAGES, workspace="Alpha")
        b = admin.create_project("bravo-proj", STAGES, workspace=bravo.id)
        admin.create_user("cw-ann", "correct horse battery", "annotator", workspace="Alpha")
        admin.create_user("cw-lead", "correct horse battery", "reviewer", workspace=alpha.id, member_role="manager")
        ann_token, lead_token = admin.create_token("cw-ann").token, admin.create_token("cw-lead").token
        assert {w.name: w.projects for w in admin.workspaces()} == {"Alpha": 1, "Bravo": 1, "Default": 0}
        assert sorted((m.username, m.role) for m in admin.members("Alpha")) == [("cw-ann", "annotator"), ("cw-lead", "manager")]
    with Client(live_server, ann_token) as ann:
        assert [p.name for p in ann.projects()] == ["alpha-proj"]
        with pytest.raises(NotFound):
            ann.claim(b.stages[0].id)
        with pytest.raises(NotFound):
            ann.project(b.id)
        with pytest.raises(NotFound):
            ann.settings(b.id)
        assert ann.workspaces() == []
    with Client(live_server, lead_token) as lead:
        assert [w.name for w in lead.workspaces()] == ["Alpha"]
        member = lead.add_member("Alpha", "cw-ann", "reviewer")
        assert member.role == "reviewer"
        with pytest.raises(NotFound):
            lead.members(bravo.id)
        with pytest.raises(Forbidden):
            lead.rename_workspace("Alpha", "Mine")
        with pytest.raises(NotFound):
            lead.move_project(a.id, bravo.id)
    with Client(live_server, admin_token) as admin:
        admin.move_project("bravo-proj", "Alpha")
    with Client(live_server, ann_token) as ann:
        assert sorted(p.name for p in ann.projects()) == ["alpha-proj", "bravo-proj"]
