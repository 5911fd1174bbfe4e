"""Elastic DLRM on Ray: ParameterServer, DLRMWorker, ShardService, ElasticController."""
from raystack.actors.elastic.controller import (ElasticController, ElasticDriver, ElasticJobError,
                                                ElasticResult, prepare_data)

__all__ = ["ElasticController", "ElasticDriver", "ElasticJobError", "ElasticResult", "prepare_data"]
