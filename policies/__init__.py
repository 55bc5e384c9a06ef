"""Policy packs: what is allowed. Each pack is a folder with PulumiPolicy.yaml, a one-call __main__.py and
importable rules; `gpufleet check` evaluates the same rule objects over a Plan.

Packs (folder -> PolicyPack name; gpufleet.review.check.PACK_FOLDERS lists them): tenancy, segmentation, cost_tags (cost-tags), gpu_guardrails (gpu-guardrails).
"""
