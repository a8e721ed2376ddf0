"""small_configs.py — the small static-mode configs the CLI tests fit and sample.
static_template(): D0 and alpha free, D_offset fixed, a few short CMC chains, as a
str.format template with a {data} field (and {q} when q="{q}"), braces of the YAML
doubled, so a test fills in its data file with .format(data=...).
STATIC_FREE: D0, alpha and D_offset free at the posterior's defaults (the small static
replicates of validation/fallback/replicates.py), fields {data}, {frames}, {d0},
{alpha}, {d_offset}."""

STATIC_FREE = """analysis_mode: static
experimental_data: {{file_path: {data}}}
analyzer_parameters:
  dt: 0.1
  start_frame: 1
  end_frame: {frames}
  scattering: {{wavevector_q: 0.01}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [{d0}, {alpha}, {d_offset}]
optimization:
  nlsq: {{anti_degeneracy: {{per_angle_mode: individual}}}}
  cmc:
    seed: 42
    per_angle_mode: individual
"""


def static_template(end_frame, seed, shards, q="0.0054", dt="0.1"):
    return f"""analysis_mode: static
experimental_data:
  file_path: {{data}}
analyzer_parameters:
  dt: {dt}
  end_frame: {end_frame}
  scattering: {{{{wavevector_q: {q}}}}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {{{{D_offset: 0}}}}
optimization:
  cmc:
    seed: {seed}
    sharding: {{{{num_shards: {shards}}}}}
    per_shard_mcmc: {{{{num_warmup: 100, num_samples: 100, num_chains: 2}}}}
"""
