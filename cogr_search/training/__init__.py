"""Training runs: the run directory and its manifest, configs, Phase 1 (targets, SFT,
orchestration) and opening a run's generators. `run_dir`, `config` and `sft_targets`
import no ML library, so sync, eval and serving hosts can read runs."""
