package config

import (
	"slices"
	"strings"

	"joulie.io/joulie/controller/internal/facility"
	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/settings"
)

// key is one setting; its Env is the seeds' variable, its flag the one
// the controller always had.
type key = settings.Key[Config]

// keys lists every setting in the order of --help and the README.
var keys = slices.Concat([]key{
	{Path: "kubeconfig", Env: []string{"KUBECONFIG"}, EmptyIsValue: true, Usage: "kubeconfig file; empty means in-cluster", DefaultText: "in-cluster",
		Ref: func(c *Config) any { return &c.Kubeconfig }},
	{Path: "metricsAddress", Env: []string{"METRICS_ADDR"}, EmptyIsValue: true, Usage: "address of /metrics, /healthz and /readyz",
		Ref: func(c *Config) any { return &c.MetricsAddr }},
	{Path: "kubeApiQps", Env: []string{"KUBE_API_QPS"}, Usage: "client queries per second to the API server",
		Ref: func(c *Config) any { return &c.QPS }},
	{Path: "kubeApiBurst", Env: []string{"KUBE_API_BURST"}, Usage: "client burst to the API server",
		Ref: func(c *Config) any { return &c.Burst }},
	{Path: "nodeSelector", Env: []string{"NODE_SELECTOR"}, EmptyIsValue: true, Usage: "label selector of managed nodes",
		Ref: func(c *Config) any { return &c.NodeSelector }},
	{Path: "policy", Env: []string{"POLICY_TYPE"}, EmptyIsValue: true, Usage: "static_partition, queue_aware_v1 or rule_swap_v1 (debug)",
		Ref: func(c *Config) any { return &c.Plan.Policy }},
	{Path: "performanceSpread", Env: []string{"PERFORMANCE_SPREAD"},
		Usage: "demand: the performance count beyond each family's densest node goes to families in proportion to their performance pods' requests; density: to the densest nodes (the seeds', which keeps every GPU node performance)",
		Ref:   func(c *Config) any { return &c.Plan.Spread }},
	{Path: "reconcileInterval", Env: []string{"RECONCILE_INTERVAL"}, Usage: "replan at least this often",
		Ref: func(c *Config) any { return &c.Plan.Interval }},
	{Path: "staticHpFrac", Env: []string{"STATIC_HP_FRAC"}, Usage: "static_partition: fraction of performance nodes",
		Ref: func(c *Config) any { return &c.Plan.StaticHPFrac }},
	{Path: "queue.hpBaseFrac", Env: []string{"QUEUE_HP_BASE_FRAC"}, Usage: "queue_aware_v1: base fraction of performance nodes",
		Ref: func(c *Config) any { return &c.Plan.Queue.BaseFrac }},
	{Path: "queue.hpMin", Env: []string{"QUEUE_HP_MIN"}, Usage: "queue_aware_v1: minimum performance nodes",
		Ref: func(c *Config) any { return &c.Plan.Queue.Min }},
	{Path: "queue.hpMax", Env: []string{"QUEUE_HP_MAX"}, Usage: "queue_aware_v1: maximum performance nodes (0: unbounded)",
		Ref: func(c *Config) any { return &c.Plan.Queue.Max }},
	{Path: "queue.perfPerHpNode", Env: []string{"QUEUE_PERF_PER_HP_NODE"}, Usage: "queue_aware_v1: performance pods one performance node absorbs",
		Ref: func(c *Config) any { return &c.Plan.Queue.PerfPerHPNode }},
	{Path: "minEcoDwell", Env: []string{"MIN_ECO_DWELL"}, Usage: "time after a change before a node may go (back) to eco; 0 is the seed's behaviour; rule_swap_v1 ignores it",
		Ref: func(c *Config) any { return &c.Plan.MinEcoDwell }},
	{Path: "guardMode", Env: []string{"GUARD_MODE"},
		Usage: "drain: every move to eco goes through draining, the node uncapped until it has drained for drainDwell with no performance pod on it (read fresh from the API); seed: the seeds' guard, eco at once when no performance pod is cached on the node, and eco caps while draining",
		Ref:   func(c *Config) any { return &c.Plan.Guard }},
	{Path: "drainDwell", Env: []string{"DRAIN_DWELL"}, Usage: "guardMode drain: how long a node stays draining, uncapped, before its eco cap is applied; longer than the extender's cache lag",
		Ref: func(c *Config) any { return &c.Plan.DrainDwell }},
	{Path: "twinRefreshInterval", Env: []string{"TWIN_REFRESH_INTERVAL"}, Usage: "rewrite an unchanged NodeTwin's lastUpdated this often (below the extender's staleness threshold)",
		Ref: func(c *Config) any { return &c.TwinRefresh }},
	{Path: "powerTrendWindow", Env: []string{"POWER_TREND_WINDOW"}, Usage: "window of the power trend",
		Ref: func(c *Config) any { return &c.TrendWindow }},
	{Path: "measurementMaxAge", Env: []string{"MEASUREMENT_MAX_AGE"}, Usage: "oldest agent power reading the twin uses",
		Ref: func(c *Config) any { return &c.Plan.MeasurementMaxAge }},
	{Path: "rackCapacityWatts", Env: []string{"RACK_CAPACITY_WATTS"}, Usage: "PSU stress reference capacity",
		Ref: func(c *Config) any { return &c.Plan.RackCapacityW }},
	{Path: "debounce", Env: []string{"RECONCILE_DEBOUNCE"}, Usage: "wait after a change so a burst of changes is one reconcile",
		Ref: func(c *Config) any { return &c.Debounce }},
	{Path: "leaderElect", Env: []string{"LEADER_ELECT"}, Usage: "hold a Lease so only one replica writes",
		Ref: func(c *Config) any { return &c.LeaderElect }},
	{Path: "leaderElectionNamespace", Env: []string{"POD_NAMESPACE"}, EmptyIsValue: true, Usage: "namespace of the Lease",
		Ref: func(c *Config) any { return &c.LeaseNamespace }},
	{Path: "leaderElectionId", Env: []string{"LEADER_ELECTION_ID"}, EmptyIsValue: true, Usage: "name of the Lease",
		Ref: func(c *Config) any { return &c.LeaseName }},
	{Path: "identity", Env: []string{"POD_NAME"}, EmptyIsValue: true, Usage: "this replica's name in the Lease", DefaultText: "the host name",
		Ref: func(c *Config) any { return &c.Identity }},
	{Path: "leaseDuration", Env: []string{"LEASE_DURATION"}, Usage: "Lease duration",
		Ref: func(c *Config) any { return &c.LeaseDuration }},
	{Path: "renewDeadline", Env: []string{"RENEW_DEADLINE"}, Usage: "leader gives up after failing to renew this long",
		Ref: func(c *Config) any { return &c.RenewDeadline }},
	{Path: "retryPeriod", Env: []string{"RETRY_PERIOD"}, Usage: "Lease retry period",
		Ref: func(c *Config) any { return &c.RetryPeriod }},
	{Path: "logLevel", Env: []string{"LOG_LEVEL"}, EmptyIsValue: true, Usage: "debug, info, warn or error",
		Ref: func(c *Config) any { return &c.LogLevel }},

	{Path: "capMode", Env: []string{"CAP_MODE"},
		Usage: "pays: each eco node gets the cap that lowers its work's energy, uncapped where the eco cap would not bind or not pay, never deeper than the eco caps; fixed: the eco caps on every eco node (the seeds')",
		Ref:   func(c *Config) any { return &c.Plan.CapMode }},
	{Path: "gpuCapScope", Env: []string{"GPU_CAP_SCOPE"},
		Usage: "node: a node's GPUs all take its profile's cap; pod: per-GPU caps, where the GPUs only standard pods hold on a performance node take the fixed eco GPU cap (the agents read who holds which GPU from the kubelet)",
		Ref:   func(c *Config) any { return &c.Plan.GPUCapScope }},
	{Path: "cpu.writeAbsoluteCaps", Env: []string{"CPU_WRITE_ABSOLUTE_CAPS"}, Usage: "write CPU caps in watts (cpu.performanceCapWatts, cpu.ecoCapWatts) rather than percentages",
		Ref: func(c *Config) any { return &c.Plan.Intent.CPUWriteAbsoluteCaps }},
	{Path: "cpu.performanceCapPctOfMax", Env: []string{"CPU_PERFORMANCE_CAP_PCT_OF_MAX"}, Usage: "CPU cap of performance nodes, in percent of the maximum",
		Ref: func(c *Config) any { return &c.Plan.Intent.CPUPerformanceCapPctOfMax }},
	{Path: "cpu.ecoCapPctOfMax", Env: []string{"CPU_ECO_CAP_PCT_OF_MAX"}, Usage: "CPU cap of eco nodes, in percent of the maximum",
		Ref: func(c *Config) any { return &c.Plan.Intent.CPUEcoCapPctOfMax }},
	{Path: "cpu.performanceCapWatts", Env: []string{"PERFORMANCE_CAP_WATTS"}, Usage: "CPU cap of performance nodes in watts per package, with cpu.writeAbsoluteCaps",
		Ref: func(c *Config) any { return &c.Plan.Intent.PerformanceCapWatts }},
	{Path: "cpu.ecoCapWatts", Env: []string{"ECO_CAP_WATTS"}, Usage: "CPU cap of eco nodes in watts per package, with cpu.writeAbsoluteCaps",
		Ref: func(c *Config) any { return &c.Plan.Intent.EcoCapWatts }},
	{Path: "gpu.writeAbsoluteCaps", Env: []string{"GPU_WRITE_ABSOLUTE_CAPS"}, Usage: "add watts per GPU next to the percentage where gpu.modelCapsJSON knows the model",
		Ref: func(c *Config) any { return &c.Plan.Intent.GPUWriteAbsoluteCaps }},
	{Path: "gpu.performanceCapPctOfMax", Env: []string{"GPU_PERFORMANCE_CAP_PCT_OF_MAX"}, Usage: "GPU cap of performance nodes, in percent of the maximum",
		Ref: func(c *Config) any { return &c.Plan.Intent.GPUPerformanceCapPctOfMax }},
	{Path: "gpu.ecoCapPctOfMax", Env: []string{"GPU_ECO_CAP_PCT_OF_MAX"}, Usage: "GPU cap of eco nodes, in percent of the maximum",
		Ref: func(c *Config) any { return &c.Plan.Intent.GPUEcoCapPctOfMax }},
	{Path: "gpu.modelCapsJSON", Env: []string{"GPU_MODEL_CAPS_JSON"}, Usage: `cap range per GPU product, as JSON: {"<product>": {"minCapWatts": W, "maxCapWatts": W}}`,
		Ref: func(c *Config) any { return modelCaps{&c.Plan.Intent.GPUModelCaps} }},
	{Path: "gpu.productLabelKeys", Env: []string{"GPU_PRODUCT_LABEL_KEYS"}, Usage: "node labels naming the GPU product, comma-separated, tried in order",
		EmptyIsValue: true, Ref: func(c *Config) any { return labelKeys{&c.Plan.Intent.GPUProductLabelKeys} }},
}, marginalKeys(), []key{
	{Path: "enableFacilityMetrics", Env: []string{facility.EnvEnabled}, Usage: "poll the facility Prometheus for ambient temperature, IT and cooling power; PUE = (IT + cooling) / IT",
		Ref: func(c *Config) any { return &c.Facility.Enabled }},
	{Path: "facility.prometheusURL", Env: []string{facility.EnvPrometheusURL}, Usage: "base URL of the facility Prometheus",
		Ref: func(c *Config) any { return &c.Facility.PrometheusURL }},
	{Path: "facility.pollInterval", Env: []string{facility.EnvPollInterval}, Usage: "time between two facility polls",
		Ref: func(c *Config) any { return &c.Facility.Interval }},
	{Path: "facility.queryTimeout", Env: []string{facility.EnvQueryTimeout}, Usage: "time limit of each facility query",
		Ref: func(c *Config) any { return &c.Facility.Timeout }},
	{Path: "facility.ambientTempMetric", Env: []string{facility.EnvAmbientTempMetric}, Usage: "metric name or PromQL giving the ambient temperature in °C (the hottest series wins)",
		Ref: func(c *Config) any { return &c.Facility.AmbientTempQuery }},
	{Path: "facility.itPowerMetric", Env: []string{facility.EnvITPowerMetric}, Usage: "metric name or PromQL giving the IT power in watts (series are summed)",
		Ref: func(c *Config) any { return &c.Facility.ITPowerQuery }},
	{Path: "facility.coolingPowerMetric", Env: []string{facility.EnvCoolingMetric}, Usage: "metric name or PromQL giving the cooling power in watts (series are summed)",
		Ref: func(c *Config) any { return &c.Facility.CoolingPowerQuery }},

	{Path: "kepler.enabled", Flag: "enable-kepler-power", Env: []string{"ENABLE_KEPLER_POWER"}, Usage: "node power from Kepler (source kepler) for nodes whose agent reports none, through the facility Prometheus (facility.prometheusURL)",
		Ref: func(c *Config) any { return &c.Kepler }},
	{Path: "kepler.nodePowerQuery", Env: []string{facility.EnvKeplerQuery}, EmptyIsValue: true, Usage: "PromQL giving watts per node",
		Ref: func(c *Config) any { return &c.KeplerQuery }},
	{Path: "kepler.nodeLabel", Env: []string{facility.EnvKeplerNodeLabel}, EmptyIsValue: true, Usage: "label of the query's series that names the node",
		Ref: func(c *Config) any { return &c.KeplerNodeLabel }},

	{Path: "parking.ipmi.cipherSuites", Env: []string{"PARKING_IPMI_CIPHER_SUITES"}, Usage: "RMCP+ cipher suites offered to BMCs, in order: 17 (SHA-256), then 3 (SHA-1, which older BMCs and ipmi_sim offer); only suites that authenticate and encrypt with AES",
		Ref: func(c *Config) any { return &c.IPMI.CipherSuites }},
	{Path: "parking.ipmi.privilege", Env: []string{"PARKING_IPMI_PRIVILEGE"}, Usage: "privilege level asked of BMCs: operator (enough for chassis power) or administrator",
		Ref: func(c *Config) any { return &c.IPMI.Privilege }},
	{Path: "parking.ipmi.timeout", Env: []string{"PARKING_IPMI_TIMEOUT"}, Usage: "wait for a BMC's answer to one message before sending it again",
		Ref: func(c *Config) any { return &c.IPMI.Timeout }},
	{Path: "parking.ipmi.retries", Env: []string{"PARKING_IPMI_RETRIES"}, Usage: "times an unanswered message to a BMC is sent again (refused credentials are never retried)",
		Ref: func(c *Config) any { return &c.IPMI.Retries }},
	{Path: "parking.ipmi.callTimeout", Env: []string{"PARKING_IPMI_CALL_TIMEOUT"}, Usage: "limit of one call to a BMC (session, command and close), and of the read of its Secret before it",
		Ref: func(c *Config) any { return &c.IPMI.CallTimeout }},
	{Path: "parking.ipmi.powerCycleOnRetry", Env: []string{"PARKING_IPMI_POWER_CYCLE_ON_RETRY"}, Usage: "on a wake's retry, power cycle a host its BMC reports on (it did not become Ready after the first power up, which another would not change); false sends power up again",
		Ref: func(c *Config) any { return &c.Parking.PowerCycleOnRetry }},
	{Path: "parking.ipmi.secretNamespace", Env: []string{"PARKING_IPMI_SECRET_NAMESPACE"}, Usage: "namespace of the BMC Secrets, joulie-bmc-<node> with keys address, username and password; a node without one is woken by Wake-on-LAN",
		Ref: func(c *Config) any { return &c.IPMI.SecretNamespace }},
	{Path: "parking.enabled", Env: []string{"PARKING_ENABLED"}, Usage: "switch off the nodes parking.nodeSelector selects while they are idle, and wake them for pending pods and the reserve",
		Ref: func(c *Config) any { return &c.Parking.Enabled }},
	{Path: "parking.nodeSelector", Env: []string{"PARKING_NODE_SELECTOR"}, EmptyIsValue: true, Usage: "label selector of the nodes that may be parked; every other node is never parked",
		Ref: func(c *Config) any { return &c.Parking.NodeSelector }},
	{Path: "parking.settleTime", Env: []string{"PARKING_SETTLE_TIME"}, Usage: "time a node must be empty of non-DaemonSet pods before it is parked",
		Ref: func(c *Config) any { return &c.Parking.Params.SettleTime }},
	{Path: "parking.reserveFloor", Env: []string{"PARKING_RESERVE_FLOOR"}, Usage: "idle awake nodes each hardware family keeps beyond its expected performance demand",
		Ref: func(c *Config) any { return &c.Parking.Params.ReserveFloor }},
	{Path: "parking.reserveSizing", Env: []string{"PARKING_RESERVE_SIZING"}, Usage: "how the reserve is sized from the lookback's performance arrivals: peak (the largest demand within one boot time) or mean (the mean rate over one boot time)",
		Ref: func(c *Config) any { return (*string)(&c.Parking.Params.ReserveSizing) }},
	{Path: "parking.reserveMaxGap", Env: []string{"PARKING_RESERVE_MAX_GAP"}, Usage: "a family keeps a warm reserve only while its performance pods arrive at least once per this gap over the lookback, the last within it, so the reserve spends at most this long of a node's idle power per boot wait it saves; 0 keeps the reserve whatever the gap",
		Ref: func(c *Config) any { return &c.Parking.Params.ReserveMaxGap }},
	{Path: "parking.reserveFor", Env: []string{"PARKING_RESERVE_FOR"}, Usage: "the pods the warm reserve is kept for: any (the first pods to come take its idle nodes) or performance (its nodes are labelled joulie.io/warm-reserve=true and the extender keeps other pods off them)",
		Ref: func(c *Config) any { return (*string)(&c.Parking.Params.ReserveFor) }},
	{Path: "parking.bootTime", Env: []string{"PARKING_BOOT_TIME"}, Usage: "time a parked node takes to be Ready; the reserve covers the performance demand arriving within it",
		Ref: func(c *Config) any { return &c.Parking.Params.BootTime }},
	{Path: "parking.lookback", Env: []string{"PARKING_LOOKBACK"}, Usage: "window of recent performance arrivals the reserve is estimated from",
		Ref: func(c *Config) any { return &c.Parking.Params.Lookback }},
	{Path: "parking.parksPerMinute", Env: []string{"PARKING_PARKS_PER_MINUTE"}, Usage: "parks started within any minute, at most",
		Ref: func(c *Config) any { return &c.Parking.Params.ParksPerMinute }},
	{Path: "parking.wakesPerMinute", Env: []string{"PARKING_WAKES_PER_MINUTE"}, Usage: "wakes (retries included) started within any minute, at most",
		Ref: func(c *Config) any { return &c.Parking.Params.WakesPerMinute }},
	{Path: "parking.grace", Env: []string{"PARKING_GRACE"}, Usage: "time between tainting a node and asking its agent to switch it off, so the scheduler has seen the taint",
		Ref: func(c *Config) any { return &c.Parking.Params.ParkGrace }},
	{Path: "parking.resumeTimeout", Env: []string{"PARKING_RESUME_TIMEOUT"}, Usage: "time a wake may take before it is tried again",
		Ref: func(c *Config) any { return &c.Parking.Params.ResumeTimeout }},
	{Path: "parking.maxWakeAttempts", Env: []string{"PARKING_MAX_WAKE_ATTEMPTS"}, Usage: "wakes tried before a node is declared wake-failed",
		Ref: func(c *Config) any { return &c.Parking.Params.MaxWakeAttempts }},
	{Path: "parking.syncInterval", Env: []string{"PARKING_SYNC_INTERVAL"}, Usage: "longest time between two parking passes; a leader whose parking loop has not finished a pass in 3 intervals plus a minute fails /healthz",
		Ref: func(c *Config) any { return &c.Parking.SyncInterval }},
	{Path: "parking.maxConcurrentWakes", Env: []string{"PARKING_MAX_CONCURRENT_WAKES"}, Usage: "wake calls (BMC sessions, Wake-on-LAN listings) in flight at once, outside the parking pass; a node has at most one",
		Ref: func(c *Config) any { return &c.Parking.MaxConcurrentWakes }},
})

// marginalKeys are the extender's coefficient keys (marginal.*), which
// the utilization model of unmeasured nodes reads too: pkg/powerest
// declares them for both programs.
func marginalKeys() []key {
	var ks []key
	for _, m := range powerest.CoefficientKeys() {
		ks = append(ks, key{Path: m.Path, Env: []string{m.Env}, Usage: m.Usage, Ref: func(c *Config) any { return m.Field(&c.Plan.Coefficients) }})
	}
	return ks
}

// category groups the flags of a block in --help.
func category(path string) string {
	switch {
	case strings.HasPrefix(path, "cpu.") || strings.HasPrefix(path, "gpu."):
		return "Power intent"
	case strings.HasPrefix(path, "marginal."):
		return "Marginal power"
	case path == "enableFacilityMetrics" || strings.HasPrefix(path, "facility.") || strings.HasPrefix(path, "kepler."):
		return "Facility and Kepler"
	case strings.HasPrefix(path, "parking."):
		return "Parking"
	}
	return ""
}

// table is the controller's configuration mechanism, built from keys.
var table = settings.New(settings.Table[Config]{
	Keys:      keys,
	ConfigEnv: ConfigEnv,
	Default:   Default,
	Check:     check,
	Complete:  complete,
	Category:  category,
})
