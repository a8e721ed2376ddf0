# monitor_draws.R — rstan::monitor (bulk/tail ESS, R-hat, moments) of draws that another
# sampler wrote, so that xpcsfit's ESS is measured with the very estimator used for Stan's.
# Driven by compare_static.py.
#
# Usage: Rscript monitor_draws.R DRAWS.csv SUMMARY.csv
#   DRAWS.csv    columns chain, iter, then one column per parameter (any names)
#   SUMMARY.csv  per parameter: name, mean, sd, Rhat, Bulk_ESS, Tail_ESS
suppressPackageStartupMessages(library(rstan))

a <- commandArgs(trailingOnly = TRUE)
if (length(a) != 2) stop("usage: monitor_draws.R DRAWS.csv SUMMARY.csv")
d <- read.csv(a[1], check.names = FALSE)
pars <- setdiff(names(d), c("chain", "iter"))
chains <- sort(unique(d$chain))
n <- min(table(d$chain))
sims <- array(NA_real_, dim = c(n, length(chains), length(pars)),
              dimnames = list(NULL, NULL, pars))            # iterations x chains x params
for (c in seq_along(chains)) {
  dc <- d[d$chain == chains[c], , drop = FALSE]
  dc <- dc[order(dc$iter), , drop = FALSE]
  sims[, c, ] <- as.matrix(dc[seq_len(n), pars, drop = FALSE])
}
mon <- as.data.frame(monitor(sims, warmup = 0, print = FALSE))
write.csv(data.frame(name = pars, mean = mon$mean, sd = mon$sd, Rhat = mon$Rhat,
                     Bulk_ESS = mon$Bulk_ESS, Tail_ESS = mon$Tail_ESS),
          a[2], row.names = FALSE)
