/* key_names.h — the dotted names of the config keys that code spells out (issue 35,
 * adr/0133): the messages that name a key for the user (at any floor: data/ says which
 * key selected no q ring), the usage texts, the readers' section paths and homodyne's
 * aliases. A key's name is written once, here, beside its row in the key table
 * (src/config/config_table.c), so a renamed key is these two places; a string literal
 * that spells a table key anywhere else fails test_key_names. Names only: nothing here
 * reads a config, so every floor may include it. Used by C's literal concatenation,
 * e.g. xf_warn(XF_KEY_DT " = %g s", dt). A comment outside the table names a key by its
 * macro too ("XF_KEY_RINGS: joint"), so the key's dotted name is in these two files only
 * and a search for the macro finds every place that speaks of the key. Some keys are
 * named by comments alone (the limits' remarks in include/, the plot and console
 * settings). */
#ifndef XPCSFIT_UTIL_KEY_NAMES_H
#define XPCSFIT_UTIL_KEY_NAMES_H

#define XF_KEY_DATA_FOLDER	   "experimental_data.data_folder_path"
#define XF_KEY_FILE_PATH	   "experimental_data.file_path"
#define XF_KEY_SPACE_MODEL	   "parameter_space.model"
#define XF_KEY_BOUNDS		   "parameter_space.bounds"
#define XF_KEY_PARAMETER_NAMES	   "initial_parameters.parameter_names"
#define XF_KEY_VALUES		   "initial_parameters.values"
#define XF_KEY_FIXED		   "initial_parameters.fixed_parameters"
#define XF_KEY_ACTIVE		   "initial_parameters.active_parameters"
#define XF_KEY_SCALING_STARTS	   "initial_parameters.per_angle_scaling"
#define XF_KEY_DT		   "analyzer_parameters.dt"
#define XF_KEY_START_FRAME	   "analyzer_parameters.start_frame"
#define XF_KEY_END_FRAME	   "analyzer_parameters.end_frame"
#define XF_KEY_TEMPORAL		   "analyzer_parameters.temporal"
#define XF_KEY_Q		   "analyzer_parameters.scattering.wavevector_q"
#define XF_KEY_GAP		   "analyzer_parameters.geometry.stator_rotor_gap"
#define XF_KEY_TARGET_RANGES	   "phi_filtering.target_ranges"
#define XF_KEY_PHI_ENABLED	   "phi_filtering.enabled"
#define XF_KEY_NLSQ_SIGMA	   "optimization.nlsq.sigma"
#define XF_KEY_NLSQ_TOLERANCE	   "optimization.nlsq.tolerance"
#define XF_KEY_NLSQ_MAX_ITERATIONS "optimization.nlsq.max_iterations"
#define XF_KEY_NLSQ_LOSS	   "optimization.nlsq.loss"
#define XF_KEY_N_STARTS		   "optimization.nlsq.multi_start.n_starts"
#define XF_KEY_FOURIER_ORDER	   "optimization.nlsq.anti_degeneracy.fourier_order"
#define XF_KEY_START_SEARCH	   "optimization.nlsq.start_search.enable"
#define XF_KEY_CMC_COMBINATION	   "optimization.cmc.combination.method"
#define XF_KEY_CMC_ROUTE	   "optimization.cmc.route"
#define XF_KEY_CMC_SHARDS	   "optimization.cmc.sharding.num_shards"
#define XF_KEY_NUM_CHAINS	   "optimization.cmc.per_shard_mcmc.num_chains"
#define XF_KEY_CMC_INFORMED_PRIORS "optimization.cmc.validation.use_nlsq_informed_priors"
#define XF_KEY_RINGS		   "optimization.rings"
#define XF_KEY_VIRTUAL_DEVICES	   "parallel.virtual_devices"
#define XF_KEY_SURFACES		   "output.surfaces"
#define XF_KEY_BASE_DIRECTORY	   "output.base_directory"
#define XF_KEY_DPI		   "plotting.dpi"
#define XF_KEY_ANGLE_PAGES	   "plotting.angle_pages"
#define XF_KEY_SHEAR_MODEL	   "analyzer_parameters.shear_model"
#define XF_KEY_LOGGING_LEVEL	   "logging.level"
#define XF_KEY_OUTPUT_DIRECTORY	   "output.directory"

#endif
