package v1alpha1

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// leaderElectionJitterFactor mirrors client-go's leaderelection.JitterFactor:
// client-go refuses a renew deadline that is not longer than this multiple of
// the retry period, and reporting it here names the offending field.
const leaderElectionJitterFactor = 1.2

// disabledBindAddress turns an HTTP endpoint off, as in controller-runtime.
const disabledBindAddress = "0"

// Validate reports every invalid field of a defaulted configuration.
func Validate(cfg *OperatorConfiguration) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateClientConnection(&cfg.ClientConnection, field.NewPath("clientConnection"))...)
	errs = append(errs, validateLeaderElection(&cfg.LeaderElection, field.NewPath("leaderElection"))...)
	errs = append(errs, validateControllers(&cfg.Controllers, field.NewPath("controllers"))...)
	errs = append(errs, validateWebhookServer(&cfg.WebhookServer, field.NewPath("webhookServer"))...)
	errs = append(errs, validateServer(&cfg.Server, field.NewPath("server"))...)
	errs = append(errs, validateScheduler(&cfg.Scheduler, field.NewPath("scheduler"))...)
	errs = append(errs, validateLogging(&cfg.Logging, field.NewPath("logging"))...)
	errs = append(errs, validateLimits(&cfg.Limits, field.NewPath("limits"))...)
	errs = append(errs, validateMNNVL(&cfg.MNNVL, field.NewPath("mnnvl"))...)
	if strings.TrimSpace(cfg.StartupGate.Image) == "" {
		errs = append(errs, field.Required(field.NewPath("startupGate", "image"), "the startup gate init container needs an image"))
	}
	return errs
}

func validateClientConnection(cc *ClientConnectionConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if cc.QPS <= 0 && cc.QPS != -1 {
		errs = append(errs, field.Invalid(path.Child("qps"), cc.QPS, "must be greater than 0, or -1 for no client-side limit"))
	}
	if cc.Burst <= 0 {
		errs = append(errs, field.Invalid(path.Child("burst"), cc.Burst, "must be greater than 0"))
	}
	return errs
}

func validateLeaderElection(le *LeaderElectionConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if le.Enabled == nil {
		errs = append(errs, field.Required(path.Child("enabled"), "must be set (call SetDefaults first)"))
	}
	if le.ResourceName == "" {
		errs = append(errs, field.Required(path.Child("resourceName"), "names the Lease used for leader election"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(le.ResourceName) {
			errs = append(errs, field.Invalid(path.Child("resourceName"), le.ResourceName, msg))
		}
	}
	if le.ResourceNamespace != "" {
		for _, msg := range validation.IsDNS1123Label(le.ResourceNamespace) {
			errs = append(errs, field.Invalid(path.Child("resourceNamespace"), le.ResourceNamespace, msg))
		}
	}

	durationsPositive := true
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"leaseDuration", le.LeaseDuration.Duration},
		{"renewDeadline", le.RenewDeadline.Duration},
		{"retryPeriod", le.RetryPeriod.Duration},
	} {
		if d.value <= 0 {
			durationsPositive = false
			errs = append(errs, field.Invalid(path.Child(d.name), d.value.String(), "must be greater than 0"))
		}
	}
	// The relations only make sense between durations that are themselves valid.
	if durationsPositive {
		if le.LeaseDuration.Duration <= le.RenewDeadline.Duration {
			errs = append(errs, field.Invalid(path.Child("leaseDuration"), le.LeaseDuration.Duration.String(),
				"must be greater than renewDeadline ("+le.RenewDeadline.Duration.String()+")"))
		}
		minRenewDeadline := time.Duration(leaderElectionJitterFactor * float64(le.RetryPeriod.Duration))
		if le.RenewDeadline.Duration <= minRenewDeadline {
			errs = append(errs, field.Invalid(path.Child("renewDeadline"), le.RenewDeadline.Duration.String(),
				"must be greater than 1.2 × retryPeriod ("+minRenewDeadline.String()+")"))
		}
	}
	return errs
}

func validateControllers(ctrls *ControllersConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, c := range []struct {
		name   string
		config ControllerConfiguration
	}{
		{"podCliqueSet", ctrls.PodCliqueSet},
		{"podClique", ctrls.PodClique},
		{"podCliqueScalingGroup", ctrls.PodCliqueScalingGroup},
		{"trainJob", ControllerConfiguration{ConcurrentSyncs: ctrls.TrainJob.ConcurrentSyncs}},
	} {
		if c.config.ConcurrentSyncs <= 0 {
			errs = append(errs, field.Invalid(path.Child(c.name, "concurrentSyncs"), c.config.ConcurrentSyncs, "must be greater than 0"))
		}
	}
	if ctrls.MaxWritesPerReconcile <= 0 {
		errs = append(errs, field.Invalid(path.Child("maxWritesPerReconcile"), ctrls.MaxWritesPerReconcile, "must be greater than 0"))
	}
	return errs
}

func validateWebhookServer(wh *WebhookServerConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if wh.Enabled == nil {
		errs = append(errs, field.Required(path.Child("enabled"), "must be set (call SetDefaults first)"))
	}
	for _, msg := range validation.IsValidPortNum(int(wh.Port)) {
		errs = append(errs, field.Invalid(path.Child("port"), wh.Port, msg))
	}
	if wh.CertDir == "" {
		errs = append(errs, field.Required(path.Child("certDir"), "must hold the serving certificate (tls.crt, tls.key)"))
	}
	errs = append(errs, validateWebhookCertificates(&wh.Certificates, path.Child("certificates"))...)
	return errs
}

// maxWebhookCertificateValidity bounds validity so that the CA's lifetime,
// ten times as long, fits in a time.Duration (about 292 years) with room.
const maxWebhookCertificateValidity = 10 * 365 * 24 * time.Hour

// validateWebhookCertificates checks the fields of mode SelfManaged only when
// that mode is chosen: in mode Provided they are ignored, so that a Helm
// chart may render them whatever the mode.
func validateWebhookCertificates(c *WebhookCertificatesConfiguration, path *field.Path) field.ErrorList {
	switch c.Mode {
	case WebhookCertificateModeSelfManaged:
	case WebhookCertificateModeProvided:
		return nil
	default:
		return field.ErrorList{field.NotSupported(path.Child("mode"), string(c.Mode),
			[]WebhookCertificateMode{WebhookCertificateModeSelfManaged, WebhookCertificateModeProvided})}
	}

	var errs field.ErrorList
	if c.SecretName == "" {
		errs = append(errs, field.Required(path.Child("secretName"), "names the Secret that holds the CA and the serving certificate"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(c.SecretName) {
			errs = append(errs, field.Invalid(path.Child("secretName"), c.SecretName, msg))
		}
	}
	if c.SecretNamespace != "" {
		for _, msg := range validation.IsDNS1123Label(c.SecretNamespace) {
			errs = append(errs, field.Invalid(path.Child("secretNamespace"), c.SecretNamespace, msg))
		}
	}
	if c.WebhookConfigurationName == "" {
		errs = append(errs, field.Required(path.Child("webhookConfigurationName"),
			"names the webhook configurations that get the CA injected"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(c.WebhookConfigurationName) {
			errs = append(errs, field.Invalid(path.Child("webhookConfigurationName"), c.WebhookConfigurationName, msg))
		}
	}

	seenDNS := map[string]bool{}
	for i, name := range c.DNSNames {
		p := path.Child("dnsNames").Index(i)
		msgs := validation.IsDNS1123Subdomain(name)
		if strings.HasPrefix(name, "*.") {
			msgs = validation.IsWildcardDNS1123Subdomain(name)
		}
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(p, name, msg))
		}
		if seenDNS[name] {
			errs = append(errs, field.Duplicate(p, name))
		}
		seenDNS[name] = true
	}
	seenIP := map[netip.Addr]bool{}
	for i, address := range c.IPAddresses {
		p := path.Child("ipAddresses").Index(i)
		ip, err := netip.ParseAddr(address)
		if err != nil || ip.Zone() != "" {
			errs = append(errs, field.Invalid(p, address, "must be an IPv4 or IPv6 address"))
			continue
		}
		if seenIP[ip.Unmap()] {
			errs = append(errs, field.Duplicate(p, address))
		}
		seenIP[ip.Unmap()] = true
	}

	validity, rotateBefore := c.Validity.Duration, c.RotateBefore.Duration
	if validity <= 0 {
		errs = append(errs, field.Invalid(path.Child("validity"), validity.String(), "must be greater than 0"))
	} else if validity > maxWebhookCertificateValidity {
		errs = append(errs, field.Invalid(path.Child("validity"), validity.String(),
			"must be at most "+maxWebhookCertificateValidity.String()+" (10 years; the CA lives 10 times as long)"))
	}
	if rotateBefore <= 0 {
		errs = append(errs, field.Invalid(path.Child("rotateBefore"), rotateBefore.String(), "must be greater than 0"))
	} else if validity > 0 && rotateBefore >= validity {
		errs = append(errs, field.Invalid(path.Child("rotateBefore"), rotateBefore.String(),
			"must be less than validity ("+validity.String()+")"))
	}
	return errs
}

func validateServer(srv *ServerConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateBindAddress(srv.HealthProbes.BindAddress, path.Child("healthProbes", "bindAddress"))...)
	errs = append(errs, validateBindAddress(srv.Metrics.BindAddress, path.Child("metrics", "bindAddress"))...)
	// Catching this here beats an "address already in use" at start-up.
	if srv.HealthProbes.BindAddress != disabledBindAddress && srv.HealthProbes.BindAddress == srv.Metrics.BindAddress {
		errs = append(errs, field.Invalid(path.Child("metrics", "bindAddress"), srv.Metrics.BindAddress,
			"must differ from "+path.Child("healthProbes", "bindAddress").String()))
	}
	return errs
}

func validateBindAddress(address string, path *field.Path) field.ErrorList {
	if address == disabledBindAddress {
		return nil
	}
	if address == "" {
		return field.ErrorList{field.Required(path, `must be a host:port or "0" to disable`)}
	}
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return field.ErrorList{field.Invalid(path, address, `must be a host:port or "0" to disable`)}
	}
	portNumber, err := strconv.Atoi(port)
	if err != nil {
		return field.ErrorList{field.Invalid(path, address, "port must be a number")}
	}
	// Port 0 lets the kernel pick one, which is legitimate for tests.
	if portNumber != 0 {
		var errs field.ErrorList
		for _, msg := range validation.IsValidPortNum(portNumber) {
			errs = append(errs, field.Invalid(path, address, msg))
		}
		return errs
	}
	return nil
}

func validateScheduler(s *SchedulerConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Backend {
	case SchedulerBackendAuto, SchedulerBackendWorkload, SchedulerBackendNone:
	default:
		errs = append(errs, field.NotSupported(path.Child("backend"), string(s.Backend),
			[]SchedulerBackend{SchedulerBackendAuto, SchedulerBackendWorkload, SchedulerBackendNone}))
	}
	if s.IncompleteGangTimeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("incompleteGangTimeout"), s.IncompleteGangTimeout.Duration.String(), "must be a positive duration"))
	}
	if s.InPlaceRestartTimeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("inPlaceRestartTimeout"), s.InPlaceRestartTimeout.Duration.String(), "must be a positive duration"))
	}
	return errs
}

func validateLogging(l *LoggingConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch l.Level {
	case LogLevelDebug, LogLevelInfo, LogLevelError:
	default:
		errs = append(errs, field.NotSupported(path.Child("level"), string(l.Level),
			[]LogLevel{LogLevelDebug, LogLevelInfo, LogLevelError}))
	}
	switch l.Format {
	case LogFormatJSON, LogFormatText:
	default:
		errs = append(errs, field.NotSupported(path.Child("format"), string(l.Format),
			[]LogFormat{LogFormatJSON, LogFormatText}))
	}
	return errs
}

func validateLimits(l *LimitsConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	perReplica, perSet := path.Child("maxPodsPerReplica"), path.Child("maxPodsPerPodCliqueSet")
	if l.MaxPodsPerReplica <= 0 {
		errs = append(errs, field.Invalid(perReplica, l.MaxPodsPerReplica, "must be greater than 0"))
	}
	if l.MaxPodsPerPodCliqueSet <= 0 {
		errs = append(errs, field.Invalid(perSet, l.MaxPodsPerPodCliqueSet, "must be greater than 0"))
	}
	// A replica is part of its PodCliqueSet: a larger replica limit could
	// never be reached.
	if len(errs) == 0 && l.MaxPodsPerReplica > l.MaxPodsPerPodCliqueSet {
		errs = append(errs, field.Invalid(perReplica, l.MaxPodsPerReplica,
			"must not be greater than "+perSet.String()+" ("+strconv.FormatInt(l.MaxPodsPerPodCliqueSet, 10)+")"))
	}
	return errs
}

func validateMNNVL(m *MNNVLConfiguration, path *field.Path) field.ErrorList {
	if m.DefaultGroup == "" {
		return nil
	}
	var errs field.ErrorList
	groupPath := path.Child("defaultGroup")
	if m.DefaultGroup == corev1alpha1.MNNVLGroupNone {
		errs = append(errs, field.Invalid(groupPath, m.DefaultGroup,
			`must be a group name: "none" opts out, leave defaultGroup empty for no default group`))
	} else {
		for _, msg := range corev1alpha1.MNNVLGroupNameErrors(m.DefaultGroup) {
			errs = append(errs, field.Invalid(groupPath, m.DefaultGroup, msg))
		}
	}
	if !m.Enabled {
		errs = append(errs, field.Invalid(groupPath, m.DefaultGroup, "needs mnnvl.enabled: true"))
	}
	return errs
}
