# run_stan.R — compile a Stan model with rstan, optionally evaluate it at fixed parameter
# sets (Fixed_param, for the model check), then sample with NUTS and write CSV files.
# Driven by compare_static.py; needs only rstan (scripts/install-stan.sh), no jsonlite.
#
# Usage: Rscript run_stan.R MODEL.stan DATA.R INITS.R OUTDIR CHAINS WARMUP SAMPLES SEED
#                            ADAPT_DELTA CORES METRICS [MODEL_CACHE.rds]
#   DATA.R   data in R dump format (rstan::read_rdump)
#   INITS.R  R code defining `inits` (a list with one list per chain) and, optionally,
#            `checks` (a list of parameter lists at which to write the model's c2)
#   METRICS  one metric or a comma-separated list (diag_e,dense_e): the model is compiled
#            once and sampled with each, in turn, into OUTDIR/<metric>/
#   MODEL_CACHE.rds  optional: the compiled model is kept there and reused while the model
#            text is the same (compile_s then is the time of the compile that made it;
#            compile_cached = 1)
# Writes to OUTDIR: check_c2.csv (one column per check set; only when `checks` is
# defined); to OUTDIR/<metric>/: timing.csv (compile_s, compile_cached, sampling_wall_s,
# sampling_cpu_s), summary.csv (per parameter:
# mean, sd, q05, q50, q95, Rhat, Bulk_ESS, Tail_ESS from rstan::monitor), draws.csv
# (post-warmup draws with chain and iteration), chains.csv (per chain: divergences,
# max-treedepth hits, step size, E-BFMI, warmup/sampling seconds), adaptation.txt
# (adapted step size and inverse metric of each chain).
# Stan 2.21 times each chain with clock(), i.e. the CPU time of the process running it, so
# warmup_s + sample_s summed over chains is the CPU time of sampling; sampling_wall_s is
# the wall time of the whole sampling() call.
suppressPackageStartupMessages(library(rstan))

a <- commandArgs(trailingOnly = TRUE)
if (length(a) != 11 && length(a) != 12)
  stop("usage: run_stan.R MODEL DATA INITS OUTDIR CHAINS WARMUP SAMPLES SEED ADAPT_DELTA CORES METRICS [CACHE]")
model_file <- a[1]; data_file <- a[2]; init_file <- a[3]; outdir <- a[4]
chains <- as.integer(a[5]); warmup <- as.integer(a[6]); samples <- as.integer(a[7])
seed <- as.integer(a[8]); adapt_delta <- as.numeric(a[9]); cores <- as.integer(a[10])
metrics <- strsplit(a[11], ",", fixed = TRUE)[[1]]
cache <- if (length(a) == 12) a[12] else ""
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)

data <- read_rdump(data_file)
env <- new.env()
sys.source(init_file, envir = env)

# Compilation (timed on its own; not part of the sampling time), or the cached model.
code <- paste(readLines(model_file), collapse = "\n")
compile_cached <- 0L
sm <- NULL
if (nzchar(cache) && file.exists(cache)) {
  cached <- readRDS(cache)
  if (identical(cached$code, code)) {
    sm <- cached$model
    compile_s <- cached$compile_s
    compile_cached <- 1L
    cat(sprintf("run_stan: compiled model from %s (its compile took %.1f s)\n", cache,
                compile_s))
  }
}
if (is.null(sm)) {
  t0 <- proc.time()[["elapsed"]]
  sm <- stan_model(model_code = code, model_name = "static_shard")
  compile_s <- proc.time()[["elapsed"]] - t0
  cat(sprintf("run_stan: compiled in %.1f s\n", compile_s))
  if (nzchar(cache))
    saveRDS(list(code = code, model = sm, compile_s = compile_s), cache)
}

# Model check: the model's c2 at given parameters (no sampling: Fixed_param, 1 draw).
if (exists("checks", envir = env)) {
  data_chk <- data
  data_chk$emit_c2 <- 1L
  cols <- list()
  for (k in seq_along(env$checks)) {
    f <- sampling(sm, data = data_chk, init = list(env$checks[[k]]), chains = 1, iter = 1,
                  algorithm = "Fixed_param", seed = seed, refresh = 0)
    cols[[sprintf("set%d", k)]] <- as.numeric(extract(f, pars = "c2_hat")$c2_hat[1, ])
  }
  write.csv(as.data.frame(cols), file.path(outdir, "check_c2.csv"), row.names = FALSE)
}

# NUTS. Wall time of the whole call (warmup + draws, all chains, `cores` in parallel).
data$emit_c2 <- 0L
for (metric in metrics) {
  mdir <- file.path(outdir, metric)
  dir.create(mdir, showWarnings = FALSE, recursive = TRUE)
  t0 <- proc.time()[["elapsed"]]
  fit <- sampling(sm, data = data, init = env$inits, chains = chains, iter = warmup + samples,
                  warmup = warmup, seed = seed, cores = cores, refresh = 0,
                  control = list(adapt_delta = adapt_delta, metric = metric))
  sampling_wall_s <- proc.time()[["elapsed"]] - t0

  pars <- setdiff(fit@model_pars, c("c2_hat", "lp__"))
  sims <- as.array(fit, pars = pars)                        # iterations x chains x params
  mon <- as.data.frame(monitor(sims, warmup = 0, probs = c(0.05, 0.5, 0.95), print = FALSE))
  summ <- data.frame(name = rownames(mon), mean = mon$mean, sd = mon$sd,
                     q05 = mon[["5%"]], q50 = mon[["50%"]], q95 = mon[["95%"]],
                     Rhat = mon$Rhat, Bulk_ESS = mon$Bulk_ESS, Tail_ESS = mon$Tail_ESS)
  write.csv(summ, file.path(mdir, "summary.csv"), row.names = FALSE)

  d <- do.call(rbind, lapply(seq_len(dim(sims)[2]), function(c)
    data.frame(chain = c, iter = seq_len(dim(sims)[1]), sims[, c, , drop = TRUE])))
  names(d) <- c("chain", "iter", dimnames(sims)[[3]])
  write.csv(d, file.path(mdir, "draws.csv"), row.names = FALSE)

  # Adapted step size and inverse metric per chain (Stan's text), for the report.
  writeLines(unlist(get_adaptation_info(fit)), file.path(mdir, "adaptation.txt"))

  sp <- get_sampler_params(fit, inc_warmup = FALSE)
  el <- get_elapsed_time(fit)
  bfmi <- get_bfmi(fit)
  ch <- data.frame(chain = seq_along(sp),
                   divergences = sapply(sp, function(s) sum(s[, "divergent__"])),
                   max_treedepth_hits = sapply(sp, function(s) sum(s[, "treedepth__"] >= 10)),
                   mean_leapfrog = sapply(sp, function(s) mean(s[, "n_leapfrog__"])),
                   stepsize = sapply(sp, function(s) s[1, "stepsize__"]),
                   bfmi = as.numeric(bfmi),
                   warmup_s = el[, "warmup"], sample_s = el[, "sample"])
  write.csv(ch, file.path(mdir, "chains.csv"), row.names = FALSE)
  sampling_cpu_s <- sum(el)
  cat(sprintf("run_stan: %s: sampled in %.1f s wall, %.1f s CPU summed over chains\n", metric,
              sampling_wall_s, sampling_cpu_s))
  write.csv(data.frame(compile_s = compile_s, compile_cached = compile_cached,
                       sampling_wall_s = sampling_wall_s, sampling_cpu_s = sampling_cpu_s,
                       chains = chains, cores = cores, metric = metric),
            file.path(mdir, "timing.csv"), row.names = FALSE)
}
