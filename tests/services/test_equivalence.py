"""Equivalence judgements are only set up when there is something to judge."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from app.errors import Invalid
from app.models import Project
from app.services.projects import projects
from app.services.review import equivalence


def test_nothing_to_judge_creates_no_companion_project(session):
    made = projects.create_project(session, "Args", projects.stage_specs_for("visargs.premises"))
    structure = projects.stages_of(session, made.id)[1]
    with pytest.raises(Invalid, match="Nothing to judge yet"):
        equivalence.create_judgements(session, structure.id)
    assert session.scalar(sa.select(sa.func.count()).select_from(Project)) == 1
