"""An example workflow file: `raystack workflow run configs/workflow_example.py`."""
from raystack.workflow import Workflow
from raystack.workflow import steps as S

workflow = Workflow("example", description="synthetic data, three models, pick and deploy")
data = workflow.step(S.make_dataset, id="data", rows=600, seed=1)
split = workflow.step(S.split_data, id="split", data=data, test_fraction=0.25)
models = workflow.map(S.train_model, over="model", items=["logistic", "centroid", "knn"],
                      id="train", data=split, retries=1)
scores = [workflow.step(S.evaluate_model, id=f"eval[{i}]", model=m, data=split)
          for i, m in enumerate(models)]
best = workflow.step(S.select_best, id="best", results=scores)
with workflow.when(best["score"], ">=", 0.7):
    workflow.step(S.deploy_model, id="deploy", model=best, name="example", directory="deployed")
with workflow.otherwise():
    workflow.step(S.notify, id="too_weak", message="best model is below 0.7 accuracy")
workflow.on_exit(S.notify, kind="always", id="done", message="example workflow finished")
