// Package schedsim is the energy simulator's scheduler: kube-scheduler
// 1.37's own framework and in-tree plugins, run in process over an
// in-memory cluster, one pod at a time, with an optional extender applied
// as kube-scheduler applies one. (Package doc to be completed.)
package schedsim
