package parking

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// noNode is a node selector no node matches: a pod with a claim that
// cannot be placed anywhere yet must wake nothing.
var noNode = corev1.NodeSelector{}

// volumeNodes is, for pending pod p, the node selectors its volumes
// require a node to match (park.Input's Volumes): a claim bound to a
// PersistentVolume with node affinity (a local volume) can be used only on
// the nodes it names, so waking any other node would not place the pod.
// An unbound claim whose StorageClass binds on the first consumer may use
// any node the class's allowedTopologies allow (any node when none); a
// claim that is missing, bound to a volume not in the cache, or unbound
// without waiting for a consumer matches no node, since the scheduler
// cannot place the pod on any node until it is resolved.
func (c *Controller) volumeNodes(p *corev1.Pod) []corev1.NodeSelector {
	var out []corev1.NodeSelector
	for _, vol := range p.Spec.Volumes {
		var claim string
		switch {
		case vol.PersistentVolumeClaim != nil:
			claim = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			// The claim a generic ephemeral volume gets is named after the
			// pod and the volume.
			claim = p.Name + "-" + vol.Name
		default:
			continue
		}
		pvc, err := c.claims.PersistentVolumeClaims(p.Namespace).Get(claim)
		if err != nil {
			out = append(out, noNode)
			continue
		}
		if pvc.Spec.VolumeName != "" {
			pv, err := c.volumes.Get(pvc.Spec.VolumeName)
			switch {
			case err != nil:
				out = append(out, noNode)
			case pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil:
				out = append(out, *pv.Spec.NodeAffinity.Required)
			}
			continue
		}
		sc, err := c.classes.Get(storageClassOf(pvc))
		if err != nil || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			out = append(out, noNode)
			continue
		}
		if len(sc.AllowedTopologies) > 0 {
			out = append(out, topologySelector(sc.AllowedTopologies))
		}
	}
	return out
}

// storageClassOf is the name of pvc's StorageClass, from the field or the
// beta annotation older clients still set.
func storageClassOf(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return pvc.Annotations[corev1.BetaStorageClassAnnotation]
}

// topologySelector is a StorageClass's allowedTopologies as a node
// selector: the terms are ORed, the expressions of a term ANDed, as the
// scheduler's volume binding reads them.
func topologySelector(terms []corev1.TopologySelectorTerm) corev1.NodeSelector {
	var ns corev1.NodeSelector
	for _, t := range terms {
		var term corev1.NodeSelectorTerm
		for _, e := range t.MatchLabelExpressions {
			term.MatchExpressions = append(term.MatchExpressions,
				corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpIn, Values: e.Values})
		}
		ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, term)
	}
	return ns
}
