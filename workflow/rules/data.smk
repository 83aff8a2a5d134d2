# Data stage: fetch (download or local copy, sha256-verified) -> prepare (vocab + token ids). A data rule's
# version is what decides its output's bytes: the raw files' sha256, the prepared corpus's pinned digest
# (replicate/data.py), so an edit of the data code that writes the same files reruns nothing; and the jobs that
# read a corpus read it by content (corpus_input, common.smk).


# fetch_data downloads: it stays on the login node of a cluster (compute nodes often have no internet).
localrules:
    fetch_data,
    data_summary,


rule fetch_data:
    output:
        directory(R(paths.DATA_RAW)),
    params:
        sha256=lambda wildcards: data.DATASETS[wildcards.dataset].sha256,
        # where from, how patient: not rerun triggers (a param function of the output is none), the files are the same
        local_dir=lambda wildcards, output: config["data"]["local_dir"] or "",
        timeout=lambda wildcards, output: config["data"]["download_timeout"],
    log:
        R("logs/data/fetch_{dataset}.log"),
    shell:
        "python -m replicate data fetch --dataset {wildcards.dataset} --out {output} "
        "--local-dir={params.local_dir:q} --timeout {params.timeout} 2>&1 | tee {log}"


rule prepare_data:
    input:
        R(paths.DATA_RAW),
    output:
        corpus=R(paths.DATA_CORPUS),
        stats=R(paths.DATA_STATS),
    params:
        corpus=lambda wildcards: data.DATASETS[wildcards.dataset].corpus,
    log:
        R("logs/data/prepare_{dataset}.log"),
    shell:
        "python -m replicate data prepare --dataset {wildcards.dataset} --raw {input} "
        "--corpus {output.corpus} --stats {output.stats} 2>&1 | tee {log}"


rule data_summary:
    input:
        expand(R(paths.DATA_STATS), dataset=config["data"]["datasets"]),
    output:
        R(paths.DATA_SUMMARY),
    params:
        code=code_version("data_cli"),
    log:
        R("logs/data/summary.log"),
    shell:
        "python -m replicate data summary --out {output} {input} 2>&1 | tee {log}"
