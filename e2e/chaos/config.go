package chaos

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Environment variables that size a run. Unset, a run is the small form
// that `make test-e2e` runs; `make chaos` sets the full form.
const (
	EnvWorkloads   = "COPSE_CHAOS_WORKLOADS"
	EnvKills       = "COPSE_CHAOS_KILLS"
	EnvSeed        = "COPSE_CHAOS_SEED"
	EnvConcurrency = "COPSE_CHAOS_CONCURRENCY"
)

// Defaults: the small form, one workload per feature (the plan's first
// len(AllFeatures) workloads are).
const (
	DefaultWorkloads   = 10
	DefaultKills       = 4
	DefaultConcurrency = 8
)

// Config is the size of a run.
type Config struct {
	Workloads int
	Kills     int
	// Concurrency is how many workloads run at once.
	Concurrency int
	// Seed fixes the plan; SeedFromEnv says whether it was given (else it
	// was drawn from the clock).
	Seed        int64
	SeedFromEnv bool
}

// ConfigFromEnv reads a Config from the environment; getenv is os.Getenv
// in the suite.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{Workloads: DefaultWorkloads, Kills: DefaultKills, Concurrency: DefaultConcurrency, Seed: time.Now().UnixNano()}
	ints := []struct {
		name string
		dst  *int
		min  int
	}{{EnvWorkloads, &cfg.Workloads, MinWorkloads}, {EnvKills, &cfg.Kills, 0}, {EnvConcurrency, &cfg.Concurrency, 1}}
	for _, v := range ints {
		raw := getenv(v.name)
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < v.min {
			return Config{}, fmt.Errorf("%s=%q: must be an integer of at least %d", v.name, raw, v.min)
		}
		*v.dst = n
	}
	if raw := getenv(EnvSeed); raw != "" {
		seed, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return Config{}, fmt.Errorf("%s=%q: must be a 64-bit integer", EnvSeed, raw)
		}
		cfg.Seed, cfg.SeedFromEnv = seed, true
	}
	cfg.Concurrency = min(cfg.Concurrency, cfg.Workloads)
	return cfg, nil
}

// ConfigFromProcessEnv is ConfigFromEnv on the process's environment.
func ConfigFromProcessEnv() (Config, error) { return ConfigFromEnv(os.Getenv) }

// Timeout bounds a whole run: each workload may take up to
// workloadDeadline, and runs Concurrency at a time; every kill may take
// the operator out for a while; plus the settling and final checks.
func (c Config) Timeout() time.Duration {
	concurrency := max(c.Concurrency, 1)
	rounds := (c.Workloads + concurrency - 1) / concurrency
	return time.Duration(rounds)*workloadDeadline + time.Duration(c.Kills)*30*time.Second + 10*time.Minute
}
