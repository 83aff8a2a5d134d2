# Inan et al. 2017: config views, target lists and run-spec functions used by inan.smk.
from replicate.inan.subspace_exp import fmt as inan_fmt, points as inan_points
from replicate.inan.train import run_settings as inan_run_settings

INAN = config["inan"]
INAN_T1 = INAN["table1"]
INAN_AB = INAN["ablation"]
INAN_SUB = INAN["subspace"]
INAN_CODE = ("inan", *LSTM_RUN_MODULES)

INAN_TABLE1_RUNS = expand("results/inan/table1/{dataset}/{size}_{variant}/metrics.json",
                          dataset=INAN_T1["datasets"], size=INAN_T1["sizes"], variant=INAN_T1["variants"])
INAN_ABLATION_RUNS = expand(
    "results/inan/ablation/{dataset}/{size}_{variant}_tau{tau}_alpha{alpha}/metrics.json",
    dataset=INAN_AB["dataset"], size=INAN_AB["size"], variant=INAN_AB["variant"],
    tau=[inan_fmt(t) for t in INAN_AB["taus"]], alpha=[inan_fmt(a) for a in INAN_AB["alphas"]])
INAN_POINTS = sorted({f"results/inan/subspace/tau{inan_fmt(t)}_beta{inan_fmt(b)}.json"
                      for _, t, b in inan_points(INAN_SUB)})



def inan_size_settings(size):
    return {**INAN["sizes"][size], "soft_target_grad": INAN["soft_target_grad"]}


def inan_table1_spec(wc):
    return {"dataset": wc.dataset, "size": wc.size, "variant": wc.variant, "seed": INAN_T1["seed"],
            "size_settings": inan_size_settings(wc.size), "reduction": INAN_T1["reduction"]}


def inan_ablation_spec(wc):
    spec = {"dataset": wc.dataset, "size": wc.size, "variant": wc.variant, "seed": INAN_AB["seed"],
            "size_settings": inan_size_settings(wc.size), "reduction": INAN_AB["reduction"],
            "overrides": {**INAN_AB["overrides"], "tau": float(wc.tau), "alpha": float(wc.alpha)},
            "tag": f"tau{wc.tau}_alpha{wc.alpha}"}
    return spec


def _with_config(spec_of):
    def spec(wc):
        s = spec_of(wc)
        return spec_json({**s, "config": run_config(None, inan_run=s)})
    return spec


def _engine_settings(spec_of):
    def settings(wc):
        s = spec_of(wc)
        return inan_run_settings(s["size_settings"], s["size"], s["variant"], s["seed"], s.get("overrides"))[0]
    return settings


def inan_point_spec(wc):
    spec = {"subspace": INAN_SUB, "tau": float(wc.tau), "beta": float(wc.beta), "seeds": INAN_SUB["seeds"]}
    return spec_json({**spec, "config": run_config(None, inan_subspace=INAN_SUB, tau=float(wc.tau),
                                                   beta=float(wc.beta))})
