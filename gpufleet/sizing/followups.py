"""What a stack must change besides its pools before `size -s`'s recommendation runs.

- Tenants' GPU quotas: Kueue admits a tenant's work on a pool only within its `gpu_quota` there, so a raised
  max above the tenants' quotas, or a new pool no tenant has quota on, adds nodes nothing is admitted to.
- The hourly budget: `policies.budget_usd_per_hour` caps the estate at max size (the cost-tags budget rule, on
  the figure `gpufleet cost` computes): the stack is priced before and after the pools recommended.
"""

from __future__ import annotations

from gpufleet.review.cost.envelope import estate_cost
from gpufleet.sizing.pools import PoolRecommendation
from model.spec import EstateSpec


def with_recommendation(spec: EstateSpec, pools: list[PoolRecommendation], region: str) -> EstateSpec:
    """`spec` as the recommendation leaves it: raised pools at their new scaling, new pools on the first cloud
    site of `region` (the one sizing priced them in), as the stack-file snippet adds them. Cross-field rules are
    not run: the changed stack is only priced."""
    raw = spec.model_dump(mode="json", exclude_unset=True, by_alias=True)
    raised = {r.name: r.demand.raised for r in pools if r.demand.placement.scale is not None}
    new = [e for r in pools if (e := r.stack_entry()) is not None]
    for site in raw["sites"]:
        for pool in site.get("node_pools", []):
            if (to := raised.get(pool["name"])) is not None:
                pool["scaling"] = {**pool.get("scaling", {}), "min": to.min, "desired": to.desired, "max": to.max}
        if new and site.get("region") == region:
            site["node_pools"] = [*site.get("node_pools", []), *new]
            new = []
    return EstateSpec.model_validate(raw)


def follow_ups(spec: EstateSpec, pools: list[PoolRecommendation], region: str) -> list[str]:
    """The quota and budget changes the recommended pools need, each a sentence naming the stack-file field."""
    notes: list[str] = []
    for rec in pools:
        d, p = rec.demand, rec.demand.placement
        if p.instance_type is None or (p.pool is not None and p.scale is None):
            continue  # owned servers, or a burst pool sized by its windows
        if p.scale is not None and (to := d.raised) is not None:
            quota = sum(t.gpu_quota.get(rec.name, 0) for t in spec.tenants)
            gpus = to.max * p.gpus_per_node
            if to.max > p.scale.max and quota < gpus:
                notes.append(
                    f"Tenants' gpu_quota on {rec.name} adds up to {quota} GPUs, of the {gpus} at its raised max: "
                    f"raise tenants[].gpu_quota.{rec.name}, or Kueue admits no work on the nodes added."
                )
        else:
            notes.append(
                f"No tenant has gpu_quota on the new pool {rec.name}: add tenants[].gpu_quota.{rec.name} for the "
                f"tenants of {', '.join(d.classes)}, or Kueue admits nothing there."
            )
    cap = spec.policies.budget_usd_per_hour
    if cap is None:
        return notes
    now, then = estate_cost(spec).budget_hour(), estate_cost(with_recommendation(spec, pools, region)).budget_hour()
    if now is not None and then is not None and then > cap and then > now:
        notes.append(
            f"At max size the stack costs ${now:,.2f}/h, ${then:,.2f}/h with the pools recommended: over "
            f"policies.budget_usd_per_hour (${cap:,.2f}). Raise it or lower a scaling.max, or the budget rule "
            "refuses the change."
        )
    return notes
