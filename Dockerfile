# vlcurate: multi-stage build; the runtime image runs `vlcurate serve` as a non-root user.
FROM python:3.11-slim AS build
# EXTRAS=worker builds the worker image with the model backends. torch comes from TORCH_INDEX (the CPU
# build by default); an empty TORCH_INDEX takes PyPI's CUDA build, for GPU workers (`suggest`):
#   docker build --build-arg EXTRAS=worker --build-arg TORCH_INDEX= -t vlcurate-worker:cuda .
ARG EXTRAS=""
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY client ./client
# ./client first: the server imports the API models from the client distribution.
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir \
      ${TORCH_INDEX:+--extra-index-url $TORCH_INDEX} ./client ".${EXTRAS:+[$EXTRAS]}"

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 vlcurate
COPY --from=build /opt/venv /opt/venv
WORKDIR /srv/vlcurate
COPY app ./app
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/srv/vlcurate \
    VLCURATE_DATA_DIR=/data
RUN mkdir /data && chown vlcurate /data
USER vlcurate
VOLUME /data
EXPOSE 8000
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
CMD ["vlcurate", "serve", "--host", "0.0.0.0", "--port", "8000"]
