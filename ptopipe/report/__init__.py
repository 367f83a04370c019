"""report: what a run did over time - the profile (busy cycles, utilisation, stall
breakdown, ring occupancy, bottleneck), Chrome trace-event JSON, HTML/SVG and PNG
swimlanes, and parameter sweeps.  Works on runs made with ``trace=True``."""
from .chrome import chrome_trace, write_chrome_trace
from .profile import CoreProfile, Profile, RingProfile, profile
from .swimlane import report_html, swimlane_svg, write_html, write_png
from .sweep import SweepRow, format_table, parse_params, sweep
from .timeline import Timeline, timeline

__all__ = ["CoreProfile", "Profile", "RingProfile", "SweepRow", "Timeline", "chrome_trace",
           "format_table", "parse_params", "profile", "report_html", "sweep", "swimlane_svg",
           "timeline", "write_chrome_trace", "write_html", "write_png"]
