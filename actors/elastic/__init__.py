"""Elastic DLRM on Ray: ParameterServer, DLRMWorker, ShardService, ElasticController."""
from raystack.actors.elastic.controller import (ElasticController, ElasticJobError, ElasticResult,
                                       prepare_data, train)

__all__ = ["ElasticController", "ElasticJobError", "ElasticResult", "prepare_data", "train"]
