# The image Argo exports run their steps in (raystack.workflow.export_argo.DEFAULT_IMAGE):
#   docker build -t raystack:0.1.0 .
# CPU torch by default; pass --build-arg TORCH_SPEC="torch==2.13.0 --index-url .../cu126" for CUDA.
FROM python:3.11-slim
ARG TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
WORKDIR /opt/raystack
RUN pip install --no-cache-dir ${TORCH_SPEC}
COPY pyproject.toml README.md ./
COPY raystack ./raystack
COPY actors ./actors
COPY apps ./apps
RUN pip install --no-cache-dir . && python -c "import raystack.workflow.argo_step"
# Steps write their outputs here; Argo collects them as artifacts.
RUN mkdir -p /tmp/outputs /tmp/inputs
WORKDIR /work
ENTRYPOINT []
