// Package fleet is the simulated hosts of Joulie's cluster in a box (make
// demo): Kubernetes nodes of several hardware families whose power caps
// are enforced by real joulie-agentd processes, a host simulator that
// turns those caps into power draw and job speed with the energy
// benchmark's physics (test/energy/physics), and a stand-in for the
// kubelets that runs the pods bound to the nodes.
//
// # Two paths to a host
//
// Most nodes are driven by one joulie-agentd in pool mode with the HTTP
// backend: the fleet serves the contract in
// agentd/internal/simulated/httpbackend/CONTRACT.md on loopback, answering
// telemetry from the simulation and taking the agent's limits as the
// node's caps. A few nodes (Config.DaemonNodes) each get their own
// joulie-agentd in Kubernetes mode, authenticated as joulie:agent:<node>,
// on a fixture host tree: proc/cpuinfo, RAPL powercap zones with energy
// counters, and a fake NVML (agentd/internal/nvml/fakenvml, built once
// with gcc) whose power readings and energy counters the simulator
// advances every tick. The limits the agent writes there (RAPL
// constraint_0_power_limit_uw, NVML limit_mw) are read back as the node's
// caps, so the host path (sysfs writes, NVML calls, the restore journal)
// runs for real.
//
// # Physics
//
// Every tick (Config.Tick) each node draws what the physics gives for its
// running pods under its caps in force: the host curve at its CPU load
// (each pod adds its requested CPUs times its class's utilization) under
// the package cap, plus each GPU at the utilization of the pod holding it
// under that GPU's cap. A running pod does Tick / Stretch(boundness, cap)
// of its work per tick, where cap is its GPUs' (GPU classes) or the
// package cap (CPU classes) as a fraction of the device's maximum. The
// energy of a tick is the power set at the previous tick times the tick's
// length (see Snapshot).
//
// # Power states
//
// A pool node's park switches it off through the contract's
// host.power_off: it then draws the physics' standby watts, its lease is
// no longer renewed and its Ready condition is Unknown. It boots, at the
// boot's average draw for Config.BootTime, when a Wake-on-LAN magic
// packet for its MAC reaches the fleet's loopback UDP listener
// (WakeAddress, every agent's parking.wakeAddress), or when its BMC is
// told to power on: Config.BMCNodes pool nodes have one, an ipmi_sim
// whose chassis power hook asks the fleet's server. Config.ParkablePool
// labels the pool nodes joulie.io/parkable=true; daemon nodes are never
// parkable and their agents never power off (they run on this machine's
// host path).
//
// # Kubernetes
//
// Nodes are created KWOK-style (Ready, allocatable CPUs, memory and
// nvidia.com/gpu, labelled joulie.io/managed=true plus LabelFleet,
// LabelFamily and LabelPath), with no hardware labels: the agents
// discover the hardware and publish NodeHardware as on real hosts. The
// stand-in watches pods: one bound to a fleet node becomes Running, and
// Succeeded once its AnnotationWork is done. Stop stops the agents with
// SIGTERM (a daemon restores the limits it changed), deletes the nodes
// and the Joulie objects named after them, and removes the pool agent's
// ServiceAccount and ClusterRole.
//
// Against an existing cluster (a kubeconfig of an admin), the same holds,
// with caveats: the chart (CRDs, agent RBAC) must be installed; the
// nodes carry no taint, so DaemonSets may place pods on them, which the
// stand-in runs without end (no AnnotationWork); node names
// (Config.NodePrefix) must not clash with real nodes; and the stand-in
// watches every pod of the cluster to find those bound to its nodes. The
// fleet renews each node's lease in kube-node-lease every 10 s, as a
// kubelet does, so the cluster's node lifecycle controller keeps the
// nodes Ready.
package fleet
