package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"joulie.io/joulie/pkg/powerest"
	"joulie.io/joulie/pkg/scoring"
)

// defaultExtenderService is where the README's helm install puts
// joulie-extender's Service.
const defaultExtenderService = "joulie-system/joulie-extender"

// settingsTimeout bounds the read of the extender's settings.
const settingsTimeout = 10 * time.Second

// extenderSettings reads the scoring settings the running joulie-extender
// uses from its GET /debug/scoring, through the API server's proxy to its
// Service (ref, NAMESPACE/NAME), so that explain scores as the extender
// does whatever the chart's values or extraEnv set. The settings it does
// not report stay base's.
func (c *cluster) extenderSettings(ctx context.Context, ref string, base scoring.Params) (scoring.Params, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return base, usageError{fmt.Errorf("--extender-service %q: want NAMESPACE/NAME of joulie-extender's Service", ref)}
	}
	svc, err := c.kc.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		// The viewer role names the extender's Service: a refusal is as
		// likely a wrong name as a missing binding.
		return base, fmt.Errorf("no permission to get the Service %s (%v): check that --extender-service names joulie-extender's Service "+
			"(the chart's joulie-viewer role grants reading that one only); else %s", ref, err, viewerHint)
	}
	if err != nil {
		return base, fmt.Errorf("joulie-extender's Service %s: %w", ref, apiError(err, "get", "services", ns))
	}
	scheme, err := servicePort(svc)
	if err != nil {
		return base, err
	}
	// An extender that does not answer must not hold explain up for the
	// API server's whole dial timeout: the defaults serve meanwhile.
	ctx, cancel := context.WithTimeout(ctx, settingsTimeout)
	defer cancel()
	raw, err := c.kc.CoreV1().Services(ns).ProxyGet(scheme, name, scheme, "debug/scoring", map[string]string{"nodes": "false"}).DoRaw(ctx)
	if err != nil {
		return base, fmt.Errorf("GET /debug/scoring of %s through the API server's service proxy: %w", ref, apiError(err, "get", "services/proxy", ns))
	}
	p, err := parseExtenderSettings(raw, base)
	if err != nil {
		return base, fmt.Errorf("the /debug/scoring of %s: %w", ref, err)
	}
	return p, nil
}

// servicePort is the scheme of the extender's Service, which is also the
// name of its port: the chart names its one port http or https.
func servicePort(svc *corev1.Service) (string, error) {
	for _, p := range svc.Spec.Ports {
		if p.Name == "https" || p.Name == "http" {
			return p.Name, nil
		}
	}
	return "", fmt.Errorf("the Service %s/%s has no port named http or https, as joulie-extender's has: check --extender-service", svc.Namespace, svc.Name)
}

// extenderReport is the part of the extender's /debug/scoring that
// holds its settings (asked with nodes=false, so without the nodes).
type extenderReport struct {
	ScoringMode        *string                `json:"scoringMode"`
	Coefficients       *powerest.Coefficients `json:"coefficients"`
	FacilityMetrics    *bool                  `json:"facilityMetrics"`
	StalenessThreshold *string                `json:"stalenessThreshold"`
}

// parseExtenderSettings reads the settings from a /debug/scoring body.
// A body that is not the extender's (no scoring mode or staleness) or
// holds a setting the extender would refuse is an error, so that explain
// never scores on a half-read configuration.
func parseExtenderSettings(raw []byte, base scoring.Params) (scoring.Params, error) {
	var r extenderReport
	if err := json.Unmarshal(raw, &r); err != nil {
		return base, fmt.Errorf("not JSON from joulie-extender: %w", err)
	}
	if r.ScoringMode == nil || r.StalenessThreshold == nil {
		return base, errors.New("no scoringMode or stalenessThreshold: is the Service joulie-extender's?")
	}
	p := base
	if err := p.Mode.UnmarshalText([]byte(*r.ScoringMode)); err != nil {
		return base, fmt.Errorf("scoringMode: %w", err)
	}
	d, err := time.ParseDuration(*r.StalenessThreshold)
	if err != nil || d <= 0 {
		return base, fmt.Errorf("stalenessThreshold %q: want a positive duration", *r.StalenessThreshold)
	}
	p.StalenessThreshold = d
	if r.FacilityMetrics != nil {
		p.FacilityMetrics = *r.FacilityMetrics
	}
	if r.Coefficients != nil {
		if err := r.Coefficients.Validate(); err != nil {
			return base, fmt.Errorf("coefficients: %w", err)
		}
		p.Coefficients = *r.Coefficients
	}
	return p, nil
}
