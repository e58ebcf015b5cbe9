package chaos_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/copse-dev/copse/e2e/chaos"
)

// The run's size comes from the environment (chaos.Env*); the default is
// the small form, which `make test-e2e` runs; `make chaos` runs the full one.
var config, configErr = chaos.ConfigFromProcessEnv()

var _ = Describe("Chaos", Label("chaos"), func() {
	It("ends every workload of every feature as the oracle says (or says why it cannot progress), with every invariant kept, while the operator is SIGKILLed",
		func(ctx context.Context) {
			Expect(configErr).NotTo(HaveOccurred())
			// A failed spec must not leave the operator down for the suite's
			// teardown and health check.
			DeferCleanup(func(ctx context.Context) {
				if ok, _ := env.Operator.Running(); !ok {
					Expect(env.Operator.Restart(ctx)).To(Succeed())
				}
			})
			report, err := chaos.Run(ctx, env, config, os.Stdout)
			Expect(err).NotTo(HaveOccurred())
			table := report.Table()
			fmt.Fprint(os.Stdout, "\n"+table+"\n")
			AddReportEntry("chaos summary", table)
			Expect(report.Violations()).To(BeEmpty(), "seed %d (replay: make chaos %s=%d %s=%d %s=%d):\n%s",
				config.Seed, chaos.EnvSeed, config.Seed, chaos.EnvWorkloads, config.Workloads, chaos.EnvKills, config.Kills,
				strings.Join(report.Violations(), "\n"))
		}, NodeTimeout(config.Timeout()))
})
