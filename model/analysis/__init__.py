"""What a researcher reads off a real model's attention: aggregates over heads and layers (`aggregate`),
per-head metrics and labels (`heads`), norm-based contributions (`contributions`), the logit lens
(`lens`) and the sizes of answers (`sizes`). `study` runs them on a loaded model and returns dataclasses,
so that a caller only asks and serializes.
"""
