"""What the officer console offers on a release page (issue 46, item 8): Approve and Reject only while a
release awaits a decision — never on a release its gates block, never again on a report already
decided; an error page says what happened in words; the publication log names the approving officer as
the one who approved, not as the one who published."""

from __future__ import annotations

from dagster_privacy.console.identity import User
from dagster_privacy.console.pages import error, release_page
from dagster_privacy.console.release_views import Evaluated, ReleaseView
from dagster_privacy.pipeline.governance.audit import AuditRow

OFFICER = User("dana", "officer")


def _view(verdict: str, decisions: tuple[str, ...] = (), published_by: str | None = None) -> ReleaseView:
    ev = Evaluated("v1", "run-1", 0.0, verdict, "/r/v1.html", "a" * 64)
    rows = [
        AuditRow(
            i + 1,
            "t",
            "v1",
            d,
            "dana",
            None,
            "why",
            "a" * 64,
            None,
            "synthetic_table",
            None,
            1,
            "run-1",
            verdict,
            "p",
            "h",
        )  # fmt: skip
        for i, d in enumerate(decisions)
    ]
    pubs = (
        [{"published_at": "t", "action": "publish", "by": published_by, "reason": None}]
        if published_by
        else []
    )
    return ReleaseView("v1", [ev], rows, pubs, current=True)


def _page(view: ReleaseView) -> str:
    return release_page(view, user=OFFICER, csrf="c", report_ok=True, can_withdraw=True)


def test_approve_is_offered_only_while_a_release_awaits_a_decision() -> None:
    waiting = _page(_view("pass"))
    assert 'value="approve"' in waiting and 'value="reject"' in waiting
    blocked = _page(_view("fail"))
    assert 'value="approve"' not in blocked and "cannot be approved" in blocked
    for decided in ("approve", "reject"):
        page = _page(_view("pass", (decided,)))
        assert 'value="approve"' not in page and 'value="reject"' not in page, decided
        assert ("approved" if decided == "approve" else "rejected") in page


def test_the_publication_log_names_who_approved() -> None:
    page = _page(_view("pass", ("approve",), published_by="dana"))
    assert "approved by dana" in page and "<th>decided by</th>" in page


def test_an_error_page_is_headed_in_words() -> None:
    page = error(409, "the release is blocked by its gates")
    assert "Not possible now (409)" in page and "blocked by its gates" in page
