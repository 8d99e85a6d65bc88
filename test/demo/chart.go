package demo

// The chart as helm renders it for the demo: the programs' arguments,
// environment and scheduler configuration, read from its manifests.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"
)

// rendered is the chart as helm rendered it for the demo.
type rendered struct {
	deployments map[string]*appsv1.Deployment
	configMaps  map[string]*corev1.ConfigMap
}

func parseRendering(manifests []byte) (*rendered, error) {
	r := &rendered{deployments: map[string]*appsv1.Deployment{}, configMaps: map[string]*corev1.ConfigMap{}}
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifests)))
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return nil, fmt.Errorf("split the chart's rendering: %w", err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("decode the chart's rendering: %w", err)
		}
		switch meta.Kind {
		case "Deployment":
			var d appsv1.Deployment
			if err := yaml.Unmarshal(doc, &d); err != nil {
				return nil, fmt.Errorf("decode a Deployment of the chart: %w", err)
			}
			r.deployments[d.Name] = &d
		case "ConfigMap":
			var c corev1.ConfigMap
			if err := yaml.Unmarshal(doc, &c); err != nil {
				return nil, fmt.Errorf("decode a ConfigMap of the chart: %w", err)
			}
			r.configMaps[c.Name] = &c
		}
	}
}

// env is the environment the chart gives the first container of a
// Deployment, with the downward API's pod name and namespace filled in
// as the kubelet would, and override applied on top.
func (r *rendered) env(deployment, podName string, override map[string]string) ([]string, error) {
	d, ok := r.deployments[deployment]
	if !ok || len(d.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("the chart's rendering has no Deployment %s", deployment)
	}
	var env []string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		v := e.Value
		if f := e.ValueFrom; f != nil {
			switch {
			case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.name":
				v = podName
			case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.namespace":
				v = d.Namespace
			default:
				return nil, fmt.Errorf("the chart's Deployment %s: environment variable %s comes from a source the demo cannot fill in", deployment, e.Name)
			}
		}
		if o, ok := override[e.Name]; ok {
			v = o
		}
		env = append(env, e.Name+"="+v)
	}
	for k, v := range override {
		if !hasEnv(env, k) {
			env = append(env, k+"="+v)
		}
	}
	return env, nil
}

func hasEnv(env []string, key string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}

// args are the command-line arguments the chart gives the first container
// of a Deployment, with every path into a mounted ConfigMap (the
// programs' --config file) turned into a copy of that file under dir.
func (r *rendered) args(deployment, dir string) ([]string, error) {
	d, ok := r.deployments[deployment]
	if !ok || len(d.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("the chart's rendering has no Deployment %s", deployment)
	}
	configMaps := map[string]string{} // volume name -> ConfigMap name
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			configMaps[v.Name] = v.ConfigMap.Name
		}
	}
	c := d.Spec.Template.Spec.Containers[0]
	args := slices.Clone(c.Args)
	for _, m := range c.VolumeMounts {
		name, ok := configMaps[m.Name]
		if !ok {
			continue
		}
		cm, ok := r.configMaps[name]
		if !ok {
			return nil, fmt.Errorf("the chart's Deployment %s mounts ConfigMap %s, which it does not render", deployment, name)
		}
		local := filepath.Join(dir, deployment+"-"+m.Name)
		if err := os.MkdirAll(local, 0o755); err != nil {
			return nil, err
		}
		for file, data := range cm.Data {
			if err := os.WriteFile(filepath.Join(local, file), []byte(data), 0o644); err != nil {
				return nil, err
			}
		}
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, m.MountPath+"/", local+"/")
		}
	}
	return args, nil
}

// schedulerConfig is the KubeSchedulerConfiguration the chart ships in
// its ConfigMap, decoded strictly.
func (r *rendered) schedulerConfig(configMap string) (*schedulerconfigv1.KubeSchedulerConfiguration, error) {
	cm, ok := r.configMaps[configMap]
	if !ok {
		return nil, fmt.Errorf("the chart's rendering has no ConfigMap %s", configMap)
	}
	var cfg schedulerconfigv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict([]byte(cm.Data["kube-scheduler-config.yaml"]), &cfg); err != nil {
		return nil, fmt.Errorf("decode the scheduler configuration of ConfigMap %s: %w", configMap, err)
	}
	return &cfg, nil
}
