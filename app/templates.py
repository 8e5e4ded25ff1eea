"""The one Jinja2 environment of the HTML pages and the docs page."""

from __future__ import annotations

from fastapi.templating import Jinja2Templates

from .settings import TEMPLATES_DIR

templates = Jinja2Templates(directory=TEMPLATES_DIR)
