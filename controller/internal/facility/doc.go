// Package facility polls Prometheus for the data-center signals the
// controller's digital twin uses beyond what nodes report: ambient
// temperature (for cooling stress), IT power and cooling power, and the PUE
// derived from them, (IT + cooling) / IT, which the scheduler extender
// multiplies marginal power by.
//
// The poller is off unless ENABLE_FACILITY_METRICS is true. Each round
// runs one instant query per signal against the Prometheus HTTP API. A
// signal that cannot be read (Prometheus down or slow, an error answer, an
// empty result, a value that is not a usable number) keeps its last good
// value: a twin that goes on with slightly old facility data ranks nodes
// better than one that loses them. The failure shows in
// joulie_facility_up, the per-query error counter and one log line per
// change between healthy and failing, so a stale value is never silent.
package facility
