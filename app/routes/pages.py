"""HTML pages. The explorer reads its state from the URL in the browser and
fetches /api/v1/models and /api/v1/attention itself, so it needs no server data."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from ..settings import TEMPLATES_DIR

templates = Jinja2Templates(directory=TEMPLATES_DIR)
router = APIRouter()


@router.get(
    "/",
    response_class=HTMLResponse,
    summary="Attention explorer page",
    description=(
        "Every layer's and head's attention map for a sentence, and one head large. "
        "The page's state lives in its query string, read by the page's script: "
        "`text`, `pair` (second segment), `model`, `layer`, `head`."
    ),
)
def explorer(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "index.html")
