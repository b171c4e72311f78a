"""Export a run record as a Workflow Run RO-Crate (https://w3id.org/ro/wfrun/workflow/0.5).

The notebook is the workflow (ComputationalWorkflow, the CreateAction's instrument); its
parameters are FormalParameters of the workflow with PropertyValues in the action's object;
inputs and outputs are File entities carrying their SHA-256 and size; the host fingerprint is a
JSON file about the action; run.json rides along unchanged.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rocrate.model.computerlanguage import ComputerLanguage
from rocrate.model.contextentity import ContextEntity
from rocrate.rocrate import ROCrate

from benchbook.atomic_write import json_safe
from benchbook.experiment.record import iter_run_dirs, read_record

PROFILES = {
    "https://w3id.org/ro/wfrun/process/0.5": "Process Run Crate",
    "https://w3id.org/ro/wfrun/workflow/0.5": "Workflow Run Crate",
}  # the rocrate package adds the Workflow RO-Crate profile itself (add_workflow(main=True))
MAX_COPY_BYTES = 2 << 30  # inputs larger than this are described, not copied


def _param_type(value: Any) -> str:
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Integer"
    if isinstance(value, float):
        return "Float"
    if isinstance(value, (list, dict)):
        return "Collection"
    return "Text"


def export_run(run_dir: Path, out_dir: Path) -> Path:
    """Write the crate for ``run_dir`` into ``out_dir`` (created; must be empty or absent)."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    record = json_safe(read_record(run_dir))  # NaN/infinity of older records as strings: valid JSON
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir}: output directory is not empty")
    staging = out_dir.with_name(f".{out_dir.name}.staging")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        crate = ROCrate(version="1.1")  # the RO-Crate version WRROC 0.5 builds on
        crate.name = f"benchbook run {record['id']} ({record['experiment']})"
        crate.description = (f"Executed notebook {Path(record['notebook']).name} with its parameters, inputs, "
                             f"outputs and host fingerprint, as recorded by benchbook (status: {record['status']}).")
        crate.datePublished = record.get("end") or record["start"]

        for pid, name in PROFILES.items():
            crate.add(ContextEntity(crate, pid, properties={"@type": "CreativeWork", "name": name,
                                                           "version": pid.rsplit("/", 1)[-1]}))

        lang = crate.add(ComputerLanguage(crate, identifier="#jupyter-notebook", properties={
            "name": "Jupyter Notebook (executed with papermill)",
            "alternateName": "ipynb",
            "url": {"@id": "https://jupyter.org"},
        }))
        source_nb = Path(record["notebook"])
        executed = run_dir / (record.get("executed_notebook") or source_nb.name)
        nb_src = source_nb if source_nb.is_file() else executed
        wf_props = {"name": source_nb.name, "sha256": record.get("notebook_sha256"),
                    "description": "the notebook as run (parameters injected by papermill)"}
        workflow = crate.add_workflow(str(nb_src), dest_path=f"workflow/{source_nb.name}", main=True, lang=lang,
                                      properties=wf_props, record_size=True)

        formal, values = [], []
        for name, value in record["parameters"].items():
            fp = crate.add_formal_parameter(name=name, additionalType=_param_type(value),
                                            identifier=f"#param-{name}", defaultValue=None)
            formal.append(fp)
            values.append(crate.add(ContextEntity(crate, f"#pv-{name}", properties={
                "@type": "PropertyValue", "name": name,
                "value": value if isinstance(value, (str, int, float, bool)) else json.dumps(value),
                "exampleOfWork": {"@id": fp.id}})))
        workflow["input"] = formal

        inputs = []
        for i, entry in enumerate(record.get("inputs", [])):
            if entry.get("role") == "notebook":
                continue
            src = Path(entry["path"])
            props = {"sha256": entry["sha256"], "contentSize": entry["bytes"], "name": src.name,
                     "description": f"input ({entry.get('role', 'input')}); original path {src}"}
            if entry.get("kind") == "directory":
                props.update({"@type": "Dataset", "description": f"input directory ({entry.get('role', 'input')}) of "
                              f"{entry.get('files')} files; sha256 is that of a sha256sum listing of them, sorted by "
                              f"path; original path {src}"})
                inputs.append(crate.add(ContextEntity(crate, f"#input-{i:03d}-{src.name}", properties=props)))
            elif src.is_file() and entry["bytes"] <= MAX_COPY_BYTES:
                inputs.append(crate.add_file(str(src), dest_path=f"inputs/{i:03d}-{src.name}", properties=props))
            else:
                props["@type"] = "File"
                inputs.append(crate.add(ContextEntity(crate, f"#input-{i:03d}-{src.name}", properties=props)))

        results = []
        for entry in record.get("outputs", []):
            src = run_dir / entry["path"]
            props = {"sha256": entry["sha256"], "contentSize": entry["bytes"]}
            if src.is_file():
                results.append(crate.add_file(str(src), dest_path=f"outputs/{entry['path']}", properties=props))

        action_id = f"#run-{record['id']}"
        status = {"complete": "CompletedActionStatus", "failed": "FailedActionStatus"}.get(
            record["status"], "ActiveActionStatus")
        props: dict[str, Any] = {"@type": "CreateAction", "name": f"benchbook run {record['id']}",
                                 "startTime": record["start"], "actionStatus": {"@id": f"http://schema.org/{status}"}}
        if record.get("end"):
            props["endTime"] = record["end"]
        if record.get("error"):
            props["error"] = record["error"]
        action = crate.add_action(workflow, identifier=action_id, object=inputs + values, result=results,
                                  properties=props)

        fp_path = staging / "host-fingerprint.json"
        fp_path.write_text(json.dumps(record.get("host", {}), indent=1, default=str))
        crate.add_file(str(fp_path), dest_path="host-fingerprint.json", properties={
            "name": "host fingerprint", "encodingFormat": "application/json",
            "about": {"@id": action.id},
            "description": "kernel, CPUs, cgroup hierarchy, NICs and offloads, qdiscs, congestion controls, "
                           "capabilities and tool versions of the host that ran this action"})
        crate.add_file(str(run_dir / "run.json"), dest_path="run.json", properties={
            "name": "benchbook run record", "encodingFormat": "application/json", "about": {"@id": action.id},
            "conformsTo": {"@id": "https://benchbook.invalid/schemas/run-record/1.json"}})
        env = record.get("environment", {})
        action["description"] = (f"environment: git {env.get('git_commit')} (dirty: {env.get('git_dirty')}), "
                                 f"pip lock sha256 {env.get('lock_sha256')}, Guix channel commit "
                                 f"{env.get('guix_channel_commit')}")
        conforms = crate.root_dataset.get("conformsTo") or []
        conforms = conforms if isinstance(conforms, list) else [conforms]
        ids = [c["@id"] if isinstance(c, dict) else c.id for c in conforms]
        crate.root_dataset["conformsTo"] = [{"@id": i} for i in list(PROFILES) + [i for i in ids if i not in PROFILES]]
        crate.write(str(out_dir))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def newest_run(experiment_dir: Path) -> Path:
    """The newest complete run under an experiment directory (by start time)."""
    best: tuple[str, Path] | None = None
    for d in iter_run_dirs(experiment_dir):
        rec = read_record(d)
        if rec["status"] == "complete" and (best is None or rec["start"] > best[0]):
            best = (rec["start"], d)
    if best is None:
        raise FileNotFoundError(f"{experiment_dir}: no complete run record")
    return best[1]
