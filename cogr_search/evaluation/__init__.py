"""Method-independent evaluation: cutoff protocol, runner, dense baseline, reports."""
