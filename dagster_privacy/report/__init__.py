"""The evidence report: one self-contained HTML file per evaluation, and a Markdown summary."""

from ..engine.distance_summary import DistanceSummary as DistanceSummary
from ..engine.distance_summary import distance_summary as distance_summary
from ..engine.distance_summary import summarize as summarize
from .html import file_sha256 as file_sha256
from .html import render_report as render_report
from .html import write_report as write_report
from .markdown import markdown_summary as markdown_summary
from .risks import RISKS as RISKS
from .risks import risk_class as risk_class

__all__ = [
    "RISKS",
    "DistanceSummary",
    "distance_summary",
    "file_sha256",
    "markdown_summary",
    "render_report",
    "risk_class",
    "summarize",
    "write_report",
]
