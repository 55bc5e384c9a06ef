"""The Pulumi program: `pulumi up -s <env>` and `gpufleet.engine.synth` both run this file unchanged."""

from components.program import run

run()
