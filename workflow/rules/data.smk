# Data stage: fetch (download or local copy, sha256-verified) -> prepare (vocab + token ids).


# fetch_data downloads: it stays on the login node of a cluster (compute nodes often have no internet).
localrules:
    fetch_data,
    data_summary,


rule fetch_data:
    output:
        directory(R(paths.DATA_RAW)),
    params:
        local_dir=config["data"]["local_dir"] or "",
        timeout=config["data"]["download_timeout"],
        code=code_version("data"),
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
        code=code_version("data"),
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
        code=code_version("data"),
    log:
        R("logs/data/summary.log"),
    shell:
        "python -m replicate data summary --out {output} {input} 2>&1 | tee {log}"
