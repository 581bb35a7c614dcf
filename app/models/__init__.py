"""SQLAlchemy models, one module per aggregate; importing this package registers every table."""

from app.models.annotations import Annotation, Assignment, Draft
from app.models.audit import AuditEvent
from app.models.base import Base
from app.models.counts import AnnotatorCount, ItemCount, StageCount
from app.models.drafting import DraftFailure, Prompt, PromptRun
from app.models.exports import Export, ItemSplit, SplitDefinition
from app.models.gold import AnnotatorFlag, AnnotatorGate, GoldItem, ImageHash, LeakReport, QuizAnswer
from app.models.items import Asset, Item, ItemResult
from app.models.jobs import AgreementReport, JobRequest, JobRun
from app.models.projects import Project, Stage, StageSample
from app.models.suggestions import Suggestion, SuggestionFailure, SuggestionOutcome
from app.models.users import ApiToken, LoginThrottle, Role, User, UserIdentity, WebSession
from app.models.webhooks import Webhook, WebhookAttempt, WebhookDelivery
from app.models.workspaces import MemberRole, Workspace, WorkspaceMember

__all__ = [
    "AgreementReport",
    "AnnotatorCount",
    "AnnotatorFlag",
    "AnnotatorGate",
    "Annotation",
    "ApiToken",
    "Asset",
    "Assignment",
    "AuditEvent",
    "Base",
    "Draft",
    "DraftFailure",
    "Export",
    "GoldItem",
    "ImageHash",
    "Item",
    "ItemCount",
    "ItemResult",
    "ItemSplit",
    "JobRequest",
    "JobRun",
    "LeakReport",
    "LoginThrottle",
    "MemberRole",
    "Project",
    "Prompt",
    "PromptRun",
    "QuizAnswer",
    "Role",
    "SplitDefinition",
    "Stage",
    "StageCount",
    "StageSample",
    "Suggestion",
    "SuggestionFailure",
    "SuggestionOutcome",
    "User",
    "UserIdentity",
    "WebSession",
    "Webhook",
    "WebhookAttempt",
    "WebhookDelivery",
    "Workspace",
    "WorkspaceMember",
]
