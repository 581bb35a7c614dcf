"""The webhook delivery job: one attempt per run, retried with a growing wait (app.services.webhooks.delivery).

The job is queued by `app.services.webhooks.events.emit` in the transaction of the change it reports,
under procrastinate's name `vlcurate:deliver_webhook` on the "webhook" queue (`register` adds it to the worker's tasks), locked by its delivery
so that two runs of one delivery never overlap. A run that finds its delivery accepted or failed for
good does nothing, so a copy run again (a stalled worker's job) never sends an accepted event twice.
"""

from __future__ import annotations

from procrastinate import BaseRetryStrategy, Blueprint, RetryDecision
from procrastinate.tasks import Task

from app.db import transaction
from app.services.webhooks import delivery, events
from app.worker.runtime import env

TASK = events.DELIVER_TASK.removeprefix("vlcurate:")


class DeliveryFailed(RuntimeError):
    """The receiver did not accept this attempt; another follows."""


class Backoff(BaseRetryStrategy):
    """Retry a failed attempt after VLCURATE_WEBHOOK_BACKOFF_SECONDS, then four times longer each time; the
    job itself stops raising at the last attempt (VLCURATE_WEBHOOK_ATTEMPTS), counted from the delivery log."""

    def get_retry_decision(self, *, exception: BaseException, job) -> RetryDecision | None:
        if not isinstance(exception, DeliveryFailed):
            return None
        return RetryDecision(retry_in={"seconds": env().settings.webhook_backoff_seconds * 4 ** min(job.attempts, 8)})


def register(blueprint: Blueprint) -> Task:
    """Add the task to the worker's blueprint (app.worker.jobs), as a new task each time the blueprint is made."""
    return blueprint.task(name=TASK, queue=events.QUEUE, retry=Backoff())(deliver_webhook)


def deliver_webhook(delivery_id: int) -> str:
    e = env()
    with transaction(e.sessions) as s:
        d = delivery.pending(s, delivery_id)
    if d is None:
        return "nothing to send"
    outcome = delivery.send(
        d, e.settings.webhook_timeout_seconds, allow_private=e.settings.webhook_private_addresses
    )
    last = d.attempt >= e.settings.webhook_attempts
    with transaction(e.sessions) as s:
        delivery.record(s, d, outcome, last=last)
    if not outcome.accepted and not last:
        raise DeliveryFailed(f"attempt {d.attempt}: {outcome.summary}")
    return outcome.summary
