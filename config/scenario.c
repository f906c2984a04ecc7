/*
 * scenario.c — the table of scenario keys and the loader built on it.
 *
 * Each key is declared once below with its type, unit, default, bounds and a
 * one-line description.  Loading a file is: read the key file, apply `--set`
 * overrides, reject unknown sections and keys, expand the [sweep] section into
 * points, and resolve every point against the table (defaults filled in,
 * units converted, bounds checked, cross-key rules checked).  Nothing is run
 * and nothing is written until every point has resolved, so a bad scenario
 * never leaves a half-written database behind.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/backend.h"
#include "netmodel/netmodel.h"
#include "comm/collectives.h"
#include "base/spell.h"
#include "policies/policy.h"
#include "config/catalog.h"
#include "config/input.h"
#include "config/models.h"
#include "config/scenario.h"
#include "config/stragglers.h"
#include "config/units.h"

/* A row of the key table: config/scenario.c's own rows name their SimConfig
 * field; rows a registry entry declares keep their value in c->values. */
typedef BaseKey KeyDef;

static const BaseChoice contention_choices[] = {
  { "max-min", NET_CONTENTION_MAXMIN, FALSE }, { "none", NET_CONTENTION_NONE, FALSE },
  { "maxmin", NET_CONTENTION_MAXMIN, TRUE }, { NULL, 0, FALSE } };
static const BaseChoice flow_class_choices[] = {
  { "auto", 0, FALSE }, { "off", 1, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice detail_choices[] = {
  { "summary", SIM_DETAIL_SUMMARY, FALSE }, { "iterations", SIM_DETAIL_ITERATIONS, FALSE },
  { "spans", SIM_DETAIL_SPANS, FALSE }, { "messages", SIM_DETAIL_MESSAGES, FALSE },
  { NULL, 0, FALSE } };
/* The name of [trace] detail's value d, as a scenario writes it. */
const char *
sim_detail_name (SimDetail d)
{
  g_return_val_if_fail (d >= SIM_DETAIL_SUMMARY && d <= SIM_DETAIL_MESSAGES, "?");
  g_assert (detail_choices[d].value == (int) d);
  return detail_choices[d].name;
}

static const BaseChoice reproducible_choices[] = {
  { "auto", SIM_REPRODUCIBLE_AUTO, FALSE }, { "true", SIM_REPRODUCIBLE_TRUE, FALSE },
  { "false", SIM_REPRODUCIBLE_FALSE, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice partition_choices[] = {
  { "iid", TRAIN_PARTITION_IID, FALSE }, { "by-label", TRAIN_PARTITION_BY_LABEL, FALSE },
  { NULL, 0, FALSE } };
static const BaseChoice recompute_choices[] = {
  { "none", SIM_RECOMPUTE_NONE, FALSE }, { "selective", SIM_RECOMPUTE_SELECTIVE, FALSE },
  { "full", SIM_RECOMPUTE_FULL, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice recover_choices[] = {
  { "reinit", POL_RECOVER_REINIT, FALSE }, { "checkpoint", POL_RECOVER_CHECKPOINT, FALSE },
  { NULL, 0, FALSE } };
static const BaseChoice precision_choices[] = {
  { "fp32", SIM_PREC_FP32, FALSE }, { "tf32", SIM_PREC_TF32, FALSE },
  { "bf16", SIM_PREC_BF16, FALSE }, { "fp16", SIM_PREC_FP16, FALSE },
  { "fp8", SIM_PREC_FP8, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice format_choices[] = {
  { "fp32", KERN_FORMAT_FP32, FALSE }, { "bf16", KERN_FORMAT_BF16, FALSE },
  { "fp16", KERN_FORMAT_FP16, FALSE }, { "fp8-e4m3", KERN_FORMAT_FP8_E4M3, FALSE },
  { "fp8-e5m2", KERN_FORMAT_FP8_E5M2, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice fusion_choices[] = {
  { "none", SIM_FUSION_NONE, FALSE }, { "elementwise", SIM_FUSION_ELEMENTWISE, FALSE },
  { NULL, 0, FALSE } };
static const BaseChoice balance_choices[] = {
  { "none", SIM_BALANCE_NONE, FALSE }, { "speed", SIM_BALANCE_SPEED, FALSE },
  { NULL, 0, FALSE } };
static const BaseChoice placement_choices[] = {
  { "packed", SIM_PLACE_PACKED, FALSE }, { "spread", SIM_PLACE_SPREAD, FALSE },
  { "random", SIM_PLACE_RANDOM, FALSE }, { "given", SIM_PLACE_GIVEN, FALSE },
  { "rail", SIM_PLACE_RAIL, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice host_cpu_choices[] = {
  { "intel", FALSE, FALSE }, { "amd", TRUE, FALSE }, { NULL, 0, FALSE } };
static const BaseChoice compute_time_choices[] = {
  { "model", FALSE, FALSE }, { "measured", TRUE, FALSE }, { NULL, 0, FALSE } };

#define OPEN_MIN BASE_OPEN_MIN
#define OPEN_MAX BASE_OPEN_MAX
#define OFF(f) offsetof (SimConfig, f)
#define BIG BASE_BIG

static const KeyDef core_keys[] = {
  { "scenario", "name", BASE_KEY_STRING, 0, NULL, 0, 0, 0, NULL, OFF (scenario_name),
    "Name of the study (default: the file name without .ini); labels runs and names the default database.", NULL },
  { "scenario", "seed", BASE_KEY_INT, 0, "1", 0, 9.2e18, 0, NULL, OFF (seed),
    "Seed of every random stream (data, stragglers); same seed, same trace.", NULL },
  { "scenario", "iterations", BASE_KEY_INT, 0, "100", 1, 1e12, 0, NULL, OFF (iterations),
    "Rounds to run: the run ends when the servers have applied iterations x workers gradients.", NULL },
  { "scenario", "time_limit", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, BIG, 0, NULL, OFF (time_limit),
    "Stop at this simulated time (0 = no limit).", NULL },
  { "scenario", "max_memory", BASE_KEY_QUANTITY, SIM_UNIT_SIZE, "4GiB", 1, BIG, 0, NULL, OFF (max_memory),
    "Most host memory a run may be estimated to need (`dtsim check` prints the estimate: transfers in flight, hosts, real math; docs/scenarios.md, \"What a run costs the host\"); a run beyond it is refused before it starts. Raise it on a larger machine.", NULL },
  { "scenario", "max_events", BASE_KEY_INT, 0, "10000000000", 1, 1e15, 0, NULL, OFF (max_events),
    "Most engine events a run may be estimated to take (`dtsim check` prints the estimate; one core processes about half a million a second, so the default is a few hours); a run beyond it is refused before it starts.", NULL },
  { "scenario", "target_loss", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, BIG, 0, NULL, OFF (target_loss),
    "Stop when an evaluation finds the training loss at or below this (0 = never).", NULL },
  { "scenario", "target_accuracy", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, 1, 0, NULL, OFF (target_accuracy),
    "Stop when an evaluation finds the test accuracy at or above this share, e.g. 0.8 (0 = never); the run table then shows the simulated time and the gradients it took.", NULL },
  { "scenario", "tokens", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, 1e16, 0, NULL, OFF (train_tokens),
    "Tokens the model is to be trained on, e.g. 300e9 (0 = not set): the run table then shows the time to train on them at the run's tokens/s, the GPU-hours and the cost (docs/trace.md, \"Buyer's metrics\"). Only for a model whose sample is a sequence of tokens; excludes epochs.", NULL },
  { "scenario", "epochs", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, 1e6, 0, NULL, OFF (train_epochs),
    "Passes over the training set the model is to be trained for (0 = not set): the time to train is epochs x the training set's samples at the run's samples/s (docs/trace.md, \"Buyer's metrics\"); excludes tokens.", NULL },
  { "cluster", "workers", BASE_KEY_INT, 0, "4", 1, SIM_MAX_HOSTS, 0, NULL, OFF (workers),
    "Number of workers.", NULL },
  { "cluster", "servers", BASE_KEY_INT, 0, "1", 0, SIM_MAX_HOSTS, 0, NULL, OFF (servers),
    "Parameter-server shards, each on its own host; parameters are split into this many contiguous shards (0 = one per worker).", NULL },
  { "cluster", "placement", BASE_KEY_ENUM, 0, "packed", 0, 0, 0, placement_choices, OFF (placement),
    "How the hosts of several jobs ([job NAME] sections) are laid on the cluster: packed (each job on consecutive hosts, jobs in order of priority), spread (hosts dealt to the jobs in turn), random (a shuffle of the cluster's hosts from [scenario] seed, then packed), given (each job's [job NAME] hosts) or rail (topology = nodes with nic = gpu: each job on the same GPU indices of whole nodes, so its ranks i mod gpus_per_node share a rail); docs/cluster.md, \"Several jobs\". Ignored without jobs.", NULL },
  { "cluster", "hosts", BASE_KEY_INT, 0, "0", 0, SIM_MAX_HOSTS, 0, NULL, OFF (hosts),
    "Hosts of a cluster shared by several jobs (0 = as many as the jobs use together); a larger cluster leaves hosts idle. Only with [job NAME] sections.", NULL },
  { "cluster", "arrivals", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, 0,
    "Arrival trace of several jobs: a CSV file (path relative to the scenario file) with the header job,arrival[,priority] and one line per job, which sets that [job NAME]'s arrival (and priority) over the section's own; at most " G_STRINGIFY (SIM_ARRIVALS_MAX_LINES) " lines (comments and blank lines included) of at most " G_STRINGIFY (SIM_ARRIVALS_MAX_LINE) " characters (docs/cluster.md, \"An arrival trace\"). Only with [job NAME] sections.", NULL },
  { "job", "arrival", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, BIG, 0, NULL, 0,
    "[job NAME] only: the simulated time at which the job starts.", NULL },
  { "job", "priority", BASE_KEY_INT, 0, "0", -1000, 1000, 0, NULL, 0,
    "[job NAME] only: placement order; a job of higher priority gets its hosts first (ties: the order of the file).", NULL },
  { "job", "hosts", BASE_KEY_INTLIST, 0, "", 0, SIM_MAX_HOSTS - 1, 0, NULL, 0,
    "[job NAME] only, with [cluster] placement = given: the cluster hosts (from 0) the job runs on, one per host it needs, in its host order (workers, then servers).", NULL },
  { "cluster", "device", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, OFF (device),
    "Device of every worker and server, by hardware-catalog name (dtsim hardware lists them): sets the [device] keys not given in the file.", NULL },
  { "cluster", "device_mix", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, OFF (devices),
    "Devices of several kinds, one per worker in worker (host) order, by hardware-catalog name with a count: e.g. a100 x 8, h100 x 8 (entries separated by commas, or by + inside a [sweep] value; the counts sum to [cluster] workers, at most 64 entries; excludes [cluster] device). Each worker's step is priced on its own device; the [device] keys the file sets apply to every kind (docs/cluster.md, \"Devices of several kinds\").", NULL },
  { "cluster", "server", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, OFF (server),
    "Server of every worker, by hardware-catalog name (dtsim hardware lists them; topology = nodes): its device, GPUs per node, NVLink fabric, NIC fabric and NICs, each where the file sets none (docs/hardware.md, \"Servers\").", NULL },
  { "cluster", "price", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, 1e6, 0, NULL, OFF (price),
    "Price of one device for one hour (per GPU-hour), a plain number in your own currency (0 = no cost shown; a hardware catalog entry may give a default): cost = GPU-hours x price.", NULL },
  { "cluster", "host_cpu", BASE_KEY_ENUM, 0, "intel", 0, 0, 0, host_cpu_choices, OFF (host_amd),
    "The servers' CPU maker, intel or amd: NCCL caps the LL protocol's bandwidth across nodes by it (docs/collectives.md, \"Bandwidth ceilings\"; NCCL's network overhead, [network] net_overhead, is 1us on Intel hosts and 2us on AMD ones, and is set separately). Default intel.", NULL },
  { "cluster", "host_cores", BASE_KEY_INT, 0, "0", 0, 4096, 0, NULL, OFF (host_cores),
    "CPU cores of one server, shared by the data loaders of the GPUs it holds (the workers of one node of the topology; one per host where the topology has no servers): a GPU's loaders get host_cores / its server's GPUs (docs/compute.md, \"The host and the input pipeline\"); 0 = the host is not modelled and input is free.", NULL },
  { "cluster", "catalog", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, OFF (catalog),
    "Hardware catalog file to look device and fabric names up in (default: the built-in scenarios/hardware.ini).", NULL },
  { "device", "flops", BASE_KEY_QUANTITY, SIM_UNIT_COMPUTE, "100GFLOPS", 0, BIG, 1, NULL, OFF (flops),
    "Peak FLOP/s of every worker and server device.", NULL },
  { "device", "efficiency", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "1", 0, 1, 1, NULL, OFF (efficiency),
    "Share of peak FLOP/s that dense matrix products (layer kind gemm) achieve, in (0, 1]; the catalog's for its precision where [cluster] device is set.", NULL },
  { "device", "fp8_flops", BASE_KEY_QUANTITY, SIM_UNIT_COMPUTE, "0", 0, BIG, 0, NULL, OFF (fp8_flops),
    "precision = fp8: dense fp8 peak FLOP/s that the linear layers' matrix products (layer kind gemm) run at, while flops is the bf16 peak every other layer runs at (the catalog's fp8_flops where [cluster] device is set; 0 = none).", NULL },
  { "device", "fp8_efficiency", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, 1, 0, NULL, OFF (fp8_efficiency),
    "precision = fp8: share of fp8_flops the linear layers' matrix products achieve, in (0, 1]; 0 = the same as efficiency (the catalog's where [cluster] device is set).", NULL },
  { "device", "conv_efficiency", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, 1, 0, NULL, OFF (conv_efficiency),
    "Share of peak FLOP/s that convolutions (layer kind conv) achieve, in (0, 1]; 0 = the same as efficiency (the catalog's for its precision where [cluster] device is set).", NULL },
  { "device", "conv3x3_efficiency", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, 4, 0, NULL, OFF (conv3x3_efficiency),
    "Share of peak FLOP/s that 3 x 3 convolutions of stride 1 (layer kind conv3x3) achieve, counted in their direct FLOPs: libraries run them with Winograd's algorithm in FP32, at fewer multiplications, so it may pass 1 (up to 4); 0 = conv_efficiency (the catalog's FP32 figure where [cluster] device is set and precision = fp32).", NULL },
  { "device", "attention_factor", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "1", 0, 1, 1, NULL, OFF (attention_factor),
    "Attention's batched matrix products (layer kind attention) run at this share of the matrix products' rate, in (0, 1] (the catalog's where [cluster] device is set).", NULL },
  { "device", "memory_efficiency", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "1", 0, 1, 1, NULL, OFF (memory_efficiency),
    "Share of memory_bandwidth that kernels achieve, in (0, 1]: a layer's memory time is bytes / (memory_bandwidth x memory_efficiency) (the catalog's where [cluster] device is set).", NULL },
  { "device", "step_time", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "-1", -1, BIG, 0, NULL, OFF (step_time),
    "Fixed compute time of one worker step (forward + backward), zero allowed; overrides the FLOP model. Default: unset (-1), use FLOPs / (flops x efficiency).", NULL },
  { "device", "kernel_overhead", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, BIG, 0, NULL, OFF (kernel_overhead),
    "Time every layer pass (a layer's forward, its backward) adds to its roofline time: kernel launches and the tail of small kernels, so that small layers and micro-batches run below the efficiency. Needs memory_bandwidth (the per-layer model); the catalog's where [cluster] device is set, else 0.", NULL },
  { "device", "overlap_slowdown", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, 10, 0, NULL, OFF (overlap_slowdown),
    "While a collective runs on a device (a gradient bucket's all-reduce during backward, kind = allreduce), its compute takes 1 + overlap_slowdown as long: the collective's kernels take SMs and memory bandwidth (the catalog's where [cluster] device is set, else 0).", NULL },
  { "device", "serial_time", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, BIG, 0, NULL, OFF (serial_time),
    "Time of every worker step that does not parallelise (Amdahl's serial part: input pipeline, host work), added before the forward pass of every step, with step_time or the FLOP model.", NULL },
  { "device", "memory_bandwidth", BASE_KEY_QUANTITY, SIM_UNIT_BANDWIDTH, "0", 0, BIG, 0, NULL, OFF (memory_bandwidth),
    "Memory bandwidth of every device (0 = not modelled): a layer costs max(FLOPs / (flops x efficiency), bytes / memory_bandwidth); also prices reductions when [policy] reduce = memory.", NULL },
  { "device", "memory", BASE_KEY_QUANTITY, SIM_UNIT_SIZE, "0", 0, BIG, 0, NULL, OFF (memory),
    "Device memory capacity (0 = not checked): a model whose parameters, gradients, optimizer state and activations exceed it (with reserve) is refused before the run.", NULL },
  { "device", "reserve", BASE_KEY_QUANTITY, SIM_UNIT_SIZE, "-1", -1, BIG, 0, NULL, OFF (reserve),
    "Device memory the framework keeps for itself, checked with the model's terms: the CUDA context, cuDNN and cuBLAS workspaces and the caching allocator's fragmentation (docs/compute.md). Default (-1): 0.5 GiB + 5% of memory where [cluster] device names a catalog device, else 0.", NULL },
  { "device", "precision", BASE_KEY_ENUM, 0, "fp32", 0, 0, 0, precision_choices, OFF (precision),
    "Which peak (and efficiency) of [cluster] device is used: fp32, or the tensor-core tf32, bf16 or fp16, or fp8 (Transformer Engine: linear layers at fp8_flops, everything else at the bf16 peak); activations move as 2-byte values under bf16, fp16 and fp8, 4-byte otherwise.", NULL },
  { "device", "compute_time", BASE_KEY_ENUM, 0, "model", 0, 0, 0, compute_time_choices, OFF (measured),
    "model: host-independent roofline time; measured: the host's wall time of the real kernels times measured_scale (emulation; not reproducible across hosts).", NULL },
  { "device", "measured_scale", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "1", 0, BIG, 1, NULL, OFF (measured_scale),
    "compute_time = measured: simulated seconds per host second of kernel time.", NULL },
  { "network", "topology", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, OFF (topology),
    "Network topology (docs/network.md).", net_topology_entries },
  { "network", "bandwidth", BASE_KEY_QUANTITY, SIM_UNIT_BANDWIDTH, "10Gbps", 0, BIG, 1, NULL, OFF (bandwidth),
    "Bandwidth of every link, in each direction, before efficiency.", NULL },
  { "network", "efficiency", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "1", 0, 1, 1, NULL, OFF (net_efficiency),
    "Share of bandwidth every link delivers after packet and protocol headers, in (0, 1]: links carry bandwidth x efficiency. Default 1 (a bandwidth written as a number is carried exactly); the catalog's where fabric names the link and bandwidth is not set.", NULL },
  { "network", "latency", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "5us", 0, BIG, 0, NULL, OFF (latency),
    "Latency of every link; on a star a transfer crosses two links.", NULL },
  { "network", "contention", BASE_KEY_ENUM, 0, "max-min", 0, 0, 0, contention_choices, OFF (contention),
    "max-min: flows share links max-min fairly; none: every flow gets its route's slowest bandwidth.", NULL },
  { "network", "flow_classes", BASE_KEY_ENUM, 0, "auto", 0, 0, 0, flow_class_choices, OFF (flow_classes),
    "auto: a collective whose ranks' transfers are equivalent (equal blocks, routes of one class, alone on the network, timing only, messages not traced) runs as one flow per class of transfers, with the same times as per message (docs/collectives.md, Flow classes); off: always per message.", NULL },
  { "network", "links", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, OFF (links),
    "Per-link overrides after the topology is built: 'NAME BANDWIDTH [LATENCY]' entries separated by ';', e.g. rack0.up 1Gbps; worker3.down 100Mbps 200us (link names: docs/network.md).", NULL },
  { "network", "fabric", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, OFF (fabric),
    "Hardware-catalog link (e.g. 100gbe, ib-hdr) giving bandwidth and latency where those keys are not set, and with its bandwidth its efficiency (docs/hardware.md) where that is not set.", NULL },
  { "network", "intra_fabric", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, OFF (intra_fabric),
    "nodes: catalog link inside a node (e.g. nvlink3) giving intra_bandwidth and intra_latency where those keys are not set, and with its bandwidth its intra_efficiency where that is not set.", NULL },
  { "network", "launch_overhead", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, BIG, 0, NULL, OFF (launch_overhead),
    "Time every collective spends before its first step (kernel launch). Default 0; the catalog's [collectives] launch_overhead where fabric or intra_fabric names a catalog link.", NULL },
  { "network", "step_overhead", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, BIG, 0, NULL, OFF (step_overhead),
    "Least latency of a collective's message between nodes (a step's synchronisation, the hop's own latency included): a message waits max(this, its route latency). Default 0; fabric's link kind's where fabric names a catalog link.", NULL },
  { "network", "intra_step_overhead", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, BIG, 0, NULL, OFF (intra_step_overhead),
    "nodes, dgx1: the same inside a server. Default 0; intra_fabric's link kind's where intra_fabric names a catalog link.", NULL },
  { "network", "net_overhead", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, BIG, 0, NULL, OFF (net_overhead),
    "NCCL's network overhead: least time of every step of a ring whose ranks span several nodes, inside the nodes too (the proxy thread posts each step; tripled under the Simple protocol). NCCL takes 1us for Intel CPUs, 2us for AMD ([cluster] host_cpu). Default 0; the catalog's [collectives] net_overhead where fabric or intra_fabric names a catalog link.", NULL },
  { "network", "nic_latency", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, 1, 0, NULL, OFF (nic_latency),
    "The latency the NIC between nodes declares to NCCL (its net plugin's latency, e.g. 75us for AWS EFA): every message of a collective between nodes adds it to its latency twice under the Simple protocol (the transfer, then the flush of its data) and once under LL128, as NCCL's tuner charges it, and not under LL, which the published two-server H100 table's smallest sizes show does not pay it (docs/collectives.md). At most 1s. Default 0.", NULL },
  { "model", "kind", BASE_KEY_NAME, 0, "softmax", 0, 0, 0, NULL, OFF (model_kind),
    "Model trained by every worker.", sim_model_kind_entries },
  { "model", "hidden", BASE_KEY_INTLIST, 0, "128", 1, 1e6, 0, NULL, OFF (hidden),
    "kind = mlp and cnn: comma-separated widths of the hidden (dense, ReLU) layers, e.g. 512,512; for cnn, after the convolutions.", NULL },
  { "model", "workload", BASE_KEY_STRING, 0, "", 0, 0, 0, NULL, OFF (workload),
    "kind = timing: a built-in layer table by name (docs/workloads.md; an unknown name gets the list) or a table file; empty = one layer of `params` and `flops`.", NULL },
  { "model", "params", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, 1e15, 0, NULL, OFF (model_params),
    "kind = timing without workload: float32 parameters of the model (at most 1e15).", NULL },
  { "model", "flops", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0", 0, BIG, 0, NULL, OFF (model_flops),
    "kind = timing without workload: FLOPs per sample, forward + backward (split 1:2).", NULL },
  { "model", "dataset", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, OFF (dataset),
    "Data set the workers train on.", sim_dataset_entries },
  { "model", "data_dir", BASE_KEY_STRING, 0, "/usr/share/datasets/fashion-mnist", 0, 0, 0, NULL, OFF (data_dir),
    "Directory of the Fashion-MNIST gzip IDX files.", NULL },
  { "model", "partition", BASE_KEY_ENUM, 0, "iid", 0, 0, 0, partition_choices, OFF (partition),
    "How the training set is shared among workers: iid (shuffled shards) or by-label (each worker sees classes_per_worker classes; docs/policies.md).", NULL },
  { "model", "classes_per_worker", BASE_KEY_INT, 0, "2", 1, 1e5, 0, NULL, OFF (classes_per_worker),
    "partition = by-label: classes each worker sees.", NULL },
  { "model", "recompute", BASE_KEY_ENUM, 0, "none", 0, 0, 0, recompute_choices, OFF (recompute),
    "Activation recomputation: none; selective (element-wise and norm layers keep nothing and run their forward again in backward); full (every layer's forward runs again in backward; only the model's input and one layer's activations are held). Time and the memory check follow (docs/compute.md).", NULL },
  { "model", "optimizer", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, OFF (optimizer),
    "Optimizer of every update; its state lives where updates are applied (on the parameter servers for kind = ps).", kern_opt_entries },
  { "model", "momentum", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0.9", 0, 1, OPEN_MAX, NULL, OFF (momentum),
    "optimizer = momentum: coefficient mu in v = mu v + g.", NULL },
  { "model", "beta1", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0.9", 0, 1, OPEN_MAX, NULL, OFF (beta1),
    "optimizer = adam: decay of the first moment.", NULL },
  { "model", "beta2", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0.999", 0, 1, OPEN_MAX, NULL, OFF (beta2),
    "optimizer = adam: decay of the second moment.", NULL },
  { "model", "eps", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "1e-8", 0, BIG, 1, NULL, OFF (eps),
    "optimizer = adam: added to the root of the second moment.", NULL },
  { "model", "warmup", BASE_KEY_INT, 0, "0", 0, 1e12, 0, NULL, OFF (warmup),
    "Learning-rate warm-up: the rate grows linearly over this many optimizer steps (0 = none).", NULL },
  { "model", "batch", BASE_KEY_INT, 0, "32", 1, 1e9, 0, NULL, OFF (batch),
    "Samples per worker step.", NULL },
  { "model", "global_batch", BASE_KEY_INT, 0, "0", 0, 1e12, 0, NULL, OFF (global_batch),
    "Strong scaling: samples per step summed over all data-parallel ranks; each rank's batch is global_batch / ranks (the workers; a pipeline's replicas; workers / tensor), which must divide exactly (0 = unset, use batch).", NULL },
  { "model", "input_time", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, 60, 0, NULL, OFF (input_time),
    "CPU time to load, decode and augment one sample on one core of the host (at most 60 s), e.g. 5ms for an ImageNet JPEG with random crop and flip, next to nothing for pre-tokenised text: a step's batch takes batch x input_time / (its loaders' cores); loaders prefetch, so a step waits only for what exceeds its device time (docs/compute.md). Needs [cluster] host_cores; 0 = input is free.", NULL },
  { "model", "loader_workers", BASE_KEY_INT, 0, "0", 0, 4096, 0, NULL, OFF (loader_workers),
    "Data-loader processes per GPU (PyTorch DataLoader num_workers, DALI num_threads), one core each, capped by the GPU's share of [cluster] host_cores; 0 = its whole share. Needs host_cores and input_time.", NULL },
  { "model", "framework_time", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, 60, 0, NULL, OFF (framework_time),
    "Host time of one step's framework work (at most 60 s): launching its kernels and the optimizer's, the Python side. The host runs ahead of the device, so it shows only where the device's step is shorter: the step lasts at least this (docs/compute.md); 0 = none.", NULL },
  { "model", "fusion", BASE_KEY_ENUM, 0, "none", 0, 0, 0, fusion_choices, OFF (fusion),
    "Kernel fusion of element-wise layers: none (eager PyTorch: every element-wise and norm layer reads and writes its activations itself); elementwise (XLA, TorchScript/nvFuser, MXNet: a chain of element-wise layers after a matrix product or convolution runs inside one kernel, reading and writing the chain's activations once; docs/compute.md).", NULL },
  { "model", "lr", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "0.1", 0, BIG, 1, NULL, OFF (lr),
    "Learning rate of every optimizer step. A synchronous round (parameter-server BSP, all-reduce, pipeline replicas) takes one step with the mean of its gradients; SSP and async servers take one step per gradient they receive (docs/policies.md).", NULL },
  { "model", "eval_every", BASE_KEY_INT, 0, "0", 0, 1e12, 0, NULL, OFF (eval_every),
    "Evaluate loss and accuracy every this many applied gradients (0 = once per round of `workers` gradients, or every few rounds so that a run evaluates at most 100 times, plus once at the end).", NULL },
  { "model", "eval_samples", BASE_KEY_INT, 0, "2048", 0, 1e9, 0, NULL, OFF (eval_samples),
    "Training samples the evaluated loss is measured on: the first this many of the (shuffled) training set, the same at every evaluation (0 = all).", NULL },
  { "model", "samples", BASE_KEY_INT, 0, "8192", 1, 1e9, 0, NULL, OFF (samples),
    "Training samples of the synthetic set, shared out among workers.", NULL },
  { "model", "test_samples", BASE_KEY_INT, 0, "2048", 1, 1e9, 0, NULL, OFF (test_samples),
    "Held-out samples of the synthetic set, for accuracy.", NULL },
  { "model", "features", BASE_KEY_INT, 0, "32", 1, 1e6, 0, NULL, OFF (features),
    "Features per sample of the synthetic set.", NULL },
  { "model", "classes", BASE_KEY_INT, 0, "10", 2, 1e5, 0, NULL, OFF (classes),
    "Classes of the synthetic set.", NULL },
  { "model", "separation", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "1", 0, BIG, 0, NULL, OFF (separation),
    "Standard deviation of the class centres of the synthetic set (noise has deviation 1): larger is easier.", NULL },
  { "policy", "kind", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, OFF (policy),
    "Training schedule (docs/policies.md).", pol_entries },
  { "policy", "balance", BASE_KEY_ENUM, 0, "none", 0, 0, 0, balance_choices, OFF (balance),
    "With [cluster] device_mix: none gives every worker the same batch; speed shares the global batch in proportion to each device's samples per second (largest remainders), and weights each gradient by its batch. Kinds allreduce and ps (docs/cluster.md, \"Devices of several kinds\").", NULL },
  { "failures", "worker", BASE_KEY_INTLIST, 0, "", 0, SIM_MAX_HOSTS - 1, 0, NULL, OFF (fail_worker),
    "Workers that fail, one per failure (one index = the same worker for every time in `at`).", NULL },
  { "failures", "at", BASE_KEY_TIMELIST, SIM_UNIT_TIME, "", 0, BIG, 0, NULL, OFF (fail_at),
    "Simulated times of the failures, comma-separated, paired with `worker` (one time = every listed worker fails then).", NULL },
  { "failures", "restart", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "500ms", 0, BIG, 0, NULL, OFF (fail_restart),
    "Delay from a failure until the worker or server is back: a worker then pulls fresh parameters and starts a new step; a server comes back as [failures] recover says (kind = ps only).", NULL },
  { "failures", "server", BASE_KEY_INTLIST, 0, "", 0, SIM_MAX_HOSTS - 1, 0, NULL, OFF (fail_server),
    "Parameter servers that crash, one per crash (one index = the same server for every time in `server_at`; kind = ps; docs/policies.md, \"Server failures\").", NULL },
  { "failures", "server_at", BASE_KEY_TIMELIST, SIM_UNIT_TIME, "", 0, BIG, 0, NULL, OFF (fail_server_at),
    "Simulated times of the server crashes, comma-separated, paired with `server` as `at` is with `worker`.", NULL },
  { "failures", "detect", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "1s", 0, 3600, 0, NULL, OFF (fail_detect),
    "[policy] replication >= 2: delay from a server crash until it is detected and the next live server of each of its ranges' chains takes the range over (at most 1 hour).", NULL },
  { "failures", "recover", BASE_KEY_ENUM, 0, "reinit", 0, 0, 0, recover_choices, OFF (fail_recover),
    "[policy] replication = 1: the keys a crashed server comes back with: reinit (the model's initial values, fresh optimizer state) or checkpoint (the last checkpoint of its keys, fresh optimizer state).", NULL },
  { "failures", "checkpoint_every", BASE_KEY_INT, 0, "0", 0, 1e12, 0, NULL, OFF (fail_checkpoint_every),
    "recover = checkpoint: a server saves its keys each time every worker has this many more gradients applied there (at no cost); needed there, refused elsewhere.", NULL },
  { "failures", "mtbf", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, BIG, 0, NULL, OFF (fail_mtbf),
    "Mean time between failures of one device of a synchronous job (kind = allreduce, pipeline): the job's devices fail as independent Poisson processes, so the whole job stops at rate devices / mtbf and restarts from its last checkpoint (0 = none; docs/policies.md, \"Job failures and checkpoints\").", NULL },
  { "failures", "link_mtbf", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "0", 0, BIG, 0, NULL, OFF (fail_link_mtbf),
    "The same for one full-duplex cable of the job's topology (two of its links, one per direction): adds cables / link_mtbf to the job's failure rate (0 = none).", NULL },
  { "failures", "job_at", BASE_KEY_TIMELIST, SIM_UNIT_TIME, "", 0, BIG, 0, NULL, OFF (fail_job_at),
    "Wall-clock times at which the whole job fails, comma-separated, besides (or instead of) the drawn ones; kind = allreduce, pipeline.", NULL },
  { "failures", "checkpoint_interval", BASE_KEY_STRING, 0, BASE_KEY_AUTO_NAME, 0, 0, 0, NULL, OFF (fail_ckpt_interval),
    "Useful work between two checkpoints of a job that fails: a time, or auto = Young's sqrt(2 C M), C the write time and M the job's mean time between failures.", NULL },
  { "failures", "checkpoint_size", BASE_KEY_QUANTITY, SIM_UNIT_SIZE, "0", 0, BIG, 0, NULL, OFF (fail_ckpt_size),
    "Bytes of one checkpoint (0 = the model's parameters and optimizer state as the memory model counts them, one copy of each parameter).", NULL },
  { "failures", "checkpoint_bandwidth", BASE_KEY_QUANTITY, SIM_UNIT_BANDWIDTH, "0", 0, BIG, 0, NULL, OFF (fail_ckpt_bandwidth),
    "Bandwidth the whole job writes a checkpoint to storage at, and reads it back at after a failure; required with job failures (no default: it is the storage's, e.g. 2TBps for Llama 3's Tectonic, docs/policies.md).", NULL },
  { "failures", "reschedule", BASE_KEY_QUANTITY, SIM_UNIT_TIME, "-1", -1, BIG, 0, NULL, OFF (fail_reschedule),
    "Time from a job failure until the job runs again on healthy devices, before it reads its checkpoint back (detection, replacement, start-up); required with job failures.", NULL },
  { "kernels", "backend", BASE_KEY_NAME, 0, NULL, 0, 0, 0, NULL, OFF (backend),
    "Where the real math runs.", kern_backend_entries },
  { "kernels", "reproducible", BASE_KEY_ENUM, 0, "auto", 0, 0, 0, reproducible_choices, OFF (reproducible),
    "true: the real math gives the same bits on every x86-64 CPU and thread count (products summed in one fixed order, docs/kernels.md); false: the CPU backend's products go to OpenBLAS, faster, with last bits that depend on the CPU; auto: true where the backend can (cpu), false otherwise (cuda).", NULL },
  { "numerics", "weights", BASE_KEY_ENUM, 0, "fp32", 0, 0, 0, format_choices, OFF (num_weights),
    "Format the forward and backward read the parameters in (fp32, bf16, fp16, fp8-e4m3, fp8-e5m2): each step rounds a copy of them; the optimizer updates the fp32 master copy (docs/kernels.md, \"Low-precision emulation\").", NULL },
  { "numerics", "gradients", BASE_KEY_ENUM, 0, "fp32", 0, 0, 0, format_choices, OFF (num_gradients),
    "Format each worker's gradient is rounded to before it leaves the worker (pushed, all-reduced or stepped on): multiplied by loss_scale, rounded, divided by it.", NULL },
  { "numerics", "loss_scale", BASE_KEY_STRING, 0, "1", 0, 0, 0, NULL, OFF (loss_scale_text),
    "Loss scale S: a static number in (0, 2^24], or dynamic (start at 2^16, halve it and skip the gradient on an inf or NaN, double it after growth_interval clean gradients). Gradients (and, with activations, the gradients at layer outputs) are rounded as round(S g) / S, so that small values survive a narrow format; a power of two scales exactly.", NULL },
  { "numerics", "growth_interval", BASE_KEY_INT, 0, "2000", 1, 1e9, 0, NULL, OFF (growth_interval),
    "loss_scale = dynamic: clean gradients in a row (no inf or NaN) after which the scale doubles; refused with a static scale.", NULL },
  { "numerics", "initial_scale", BASE_KEY_QUANTITY, SIM_UNIT_NONE, "65536", 0, 16777216, OPEN_MIN, NULL, OFF (initial_scale),
    "loss_scale = dynamic: the scale of the first gradient, in (0, 2^24] (default 2^16, as PyTorch's GradScaler); refused with a static scale.", NULL },
  { "numerics", "communication", BASE_KEY_ENUM, 0, "fp32", 0, 0, 0, format_choices, OFF (num_communication),
    "Format of the values a transfer carries: kind = allreduce rounds each worker's contribution and the summed result, kind = ps each pushed gradient and each pulled shard of parameters, local-sgd each model averaged and the sum, fedavg the global model sent and each model sent back, gossip the model each worker sends its neighbours.", NULL },
  { "numerics", "activations", BASE_KEY_ENUM, 0, "fp32", 0, 0, 0, format_choices, OFF (num_activations),
    "Format each layer's output is rounded to in forward, and the gradient at it in backward (with loss_scale); kind = mlp, softmax, linear and gpt on backend = cpu.", NULL },
  { "trace", "detail", BASE_KEY_ENUM, 0, "iterations", 0, 0, 0, detail_choices, OFF (detail),
    "Tables written: summary (runs, params, metrics), iterations, spans, messages; each level includes the ones before.", NULL },
  { "trace", "db", BASE_KEY_STRING, 0, NULL, 0, 0, 0, NULL, OFF (db),
    "Output database (default: results/NAME.db; -o on the command line wins).", NULL },
  { "trace", "max_size", BASE_KEY_QUANTITY, SIM_UNIT_SIZE, "2GB", 1, BIG, 0, NULL, OFF (trace_max_size),
    "Most bytes the database may be estimated to take (every point of a sweep together; `dtsim check` prints the estimate); a run beyond it is refused before it starts: lower detail or [scenario] iterations, or raise this.", NULL },
};

/* The sections in the order `dtsim keys` lists them. */
static const char *const sections[] = {
  "scenario", "cluster", "device", "network", "model", "policy", "stragglers",
  "failures", "kernels", "numerics", "trace", "job", NULL,
};

/* Appends the rows the registries declare, for every section. */
static void
registry_keys (GPtrArray *rows)
{
  net_topology_keys (rows);
  sim_model_kind_keys (rows);
  pol_keys (rows);
  sim_stragglers_keys (rows);
}

/* k, or for a registry key without a default (BASE_KEY_NAME, def NULL) a
 * copy whose default is the name of the registry's first entry, so that
 * no file but the entry's own spells the name.  Made once per key, kept
 * for the life of the process with the table. */
static const KeyDef *
with_default (const KeyDef *k)
{
  if (k->type != BASE_KEY_NAME || k->def)
    return k;
  const void *first = k->entries ()[0];
  g_assert (first);
  KeyDef *copy = g_memdup2 (k, sizeof *k);
  copy->def = *(const char *const *) first;
  return copy;
}

/* Every scenario key: for each section, this file's rows then the rows of
 * the registries, built once.  A key two registry entries both declare is
 * listed once (the first). */
static GPtrArray *
key_table (void)
{
  static GPtrArray *table;
  if (g_once_init_enter (&table))
    {
      g_autoptr (GPtrArray) reg = g_ptr_array_new ();
      registry_keys (reg);
      GPtrArray *t = g_ptr_array_new ();
      g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      for (int s = 0; sections[s]; s++)
        for (int pass = 0; pass < 2; pass++)
          {
            guint n = pass == 0 ? G_N_ELEMENTS (core_keys) : reg->len;
            for (guint i = 0; i < n; i++)
              {
                const KeyDef *k = pass == 0 ? &core_keys[i] : g_ptr_array_index (reg, i);
                if (strcmp (k->section, sections[s]) != 0)
                  continue;
                char *dotted = g_strdup_printf ("%s.%s", k->section, k->key);
                if (!g_hash_table_add (seen, dotted))
                  continue;
                g_ptr_array_add (t, (gpointer) with_default (k));
              }
          }
      g_assert (t->len == g_hash_table_size (seen));
      g_once_init_leave (&table, t);
    }
  return table;
}

#define N_KEYS (key_table ()->len)
#define KEY(i) ((const KeyDef *) g_ptr_array_index (key_table (), (i)))

static const KeyDef *
find_key (const char *section, const char *key)
{
  for (guint i = 0; i < N_KEYS; i++)
    if (strcmp (KEY (i)->section, section) == 0 && strcmp (KEY (i)->key, key) == 0)
      return KEY (i);
  return NULL;
}

const char *
sim_scenario_choice_name (const char *section, const char *key, int value)
{
  const KeyDef *k = find_key (section, key);
  g_return_val_if_fail (k && k->type == BASE_KEY_ENUM, NULL);
  for (const BaseChoice *ch = k->choices; ch->name; ch++)
    if (!ch->alias && ch->value == value)
      return ch->name;
  return NULL;
}

static gboolean
known_section (const char *section)
{
  return strcmp (section, "sweep") == 0 || g_strv_contains (sections, section);
}

static char *
list_keys_of (const char *section)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < N_KEYS; i++)
    if (strcmp (KEY (i)->section, section) == 0)
      g_string_append_printf (s, "%s%s", s->len ? ", " : "", KEY (i)->key);
  return g_string_free (s, FALSE);
}

/* " did you mean X?" (with the section when `section` is not NULL) for
 * the key of `section` (or, section NULL, the section) closest to `word`,
 * or "". */
static char *
suggest_key (const char *section, const char *word)
{
  BaseSpell sp;
  base_spell_init (&sp, word);
  if (section)
    {
      for (guint i = 0; i < N_KEYS; i++)
        if (strcmp (KEY (i)->section, section) == 0)
          base_spell_offer (&sp, KEY (i)->key);
    }
  else
    {
      for (int i = 0; sections[i]; i++)
        base_spell_offer (&sp, sections[i]);
      base_spell_offer (&sp, "sweep");
    }
  const char *best = base_spell_best (&sp);
  if (!best)
    return g_strdup ("");
  return section ? g_strdup_printf (" did you mean %s?", best)
                 : g_strdup_printf (" did you mean [%s]?", best);
}

/* The same for a dotted "section.key" (a sweep or --set name): the closest
 * of every key, written dotted. */
static char *
suggest_dotted (const char *word)
{
  BaseSpell sp;
  base_spell_init (&sp, word);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < N_KEYS; i++)
    g_ptr_array_add (names, g_strdup_printf ("%s.%s", KEY (i)->section, KEY (i)->key));
  for (guint i = 0; i < names->len; i++)
    base_spell_offer (&sp, g_ptr_array_index (names, i));
  const char *best = base_spell_best (&sp);
  return best ? g_strdup_printf (" did you mean %s?", best) : g_strdup ("");
}

static char *
list_sections (void)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; sections[i]; i++)
    g_string_append_printf (s, "[%s] ", sections[i]);
  g_string_append (s, "[sweep]");
  return g_string_free (s, FALSE);
}

/* The name of a registry entry (BaseKey.entries): its first member. */
static const char *
entry_name (const void *entry)
{
  return *(const char *const *) entry;
}

/* The names a BASE_KEY_ENUM or BASE_KEY_NAME key accepts, joined by sep
 * (aliases left out). */
static char *
choice_list (const KeyDef *k, const char *sep)
{
  GString *s = g_string_new (NULL);
  if (k->type == BASE_KEY_NAME)
    for (const void *const *e = k->entries (); *e; e++)
      g_string_append_printf (s, "%s%s", s->len ? sep : "", entry_name (*e));
  else
    for (const BaseChoice *ch = k->choices; ch->name; ch++)
      if (!ch->alias)
        g_string_append_printf (s, "%s%s", s->len ? sep : "", ch->name);
  return g_string_free (s, FALSE);
}

static gboolean G_GNUC_PRINTF (4, 5)
fail (GError **error, const char *file, const KeyDef *k, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (k)
    g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [%s] %s: %s", file,
                 k->section, k->key, msg);
  else
    g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: %s", file, msg);
  return FALSE;
}

/* Splits "section.key" at its first dot. */
static gboolean
split_dotted (const char *dotted, char **section, char **key)
{
  const char *dot = strchr (dotted, '.');
  if (!dot || dot == dotted || dot[1] == '\0')
    return FALSE;
  *section = g_strndup (dotted, dot - dotted);
  *key = g_strdup (dot + 1);
  return TRUE;
}

/* A sweep key names one scenario key, or several joined by '/' that take
 * their values together ("policy.kind/cluster.servers = ps/1, allreduce/1"). */
static gboolean
valid_sweep_key (const char *name)
{
  g_auto (GStrv) parts = g_strsplit (name, "/", -1);
  if (!parts[0])
    return FALSE;
  for (int i = 0; parts[i]; i++)
    {
      g_autofree char *s = NULL, *k = NULL;
      if (!split_dotted (g_strstrip (parts[i]), &s, &k) || !find_key (s, k))
        return FALSE;
    }
  return TRUE;
}

/* A resolved value: the member the key's type uses. */
typedef struct {
  gint64 i;       /* INT; ENUM (the choice's value) */
  double d;       /* QUANTITY */
  const char *s;  /* STRING, NAME (copied) */
  GArray *a;      /* INTLIST, TIMELIST (taken) */
} Resolved;

/* Stores v where k's value goes: the SimConfig field of one of this file's
 * rows, or c->values for a row a registry declares. */
static void
store (SimConfig *c, const KeyDef *k, Resolved v)
{
  char *field = (char *) c + k->offset;
  g_autofree char *dotted = g_strdup_printf ("%s.%s", k->section, k->key);
  BaseValues *bag = k->offset ? NULL : c->values;
  switch (k->type)
    {
    case BASE_KEY_INT:
      bag ? base_values_set_int (bag, dotted, v.i) : (void) (*(gint64 *) field = v.i);
      return;
    case BASE_KEY_ENUM: /* the field is an enum type or a gboolean */
      bag ? base_values_set_int (bag, dotted, v.i) : (void) (*(int *) field = (int) v.i);
      return;
    case BASE_KEY_QUANTITY:
      bag ? base_values_set_double (bag, dotted, v.d) : (void) (*(double *) field = v.d);
      return;
    case BASE_KEY_STRING:
    case BASE_KEY_NAME:
      bag ? base_values_set_string (bag, dotted, v.s) : (void) (*(char **) field = g_strdup (v.s));
      return;
    case BASE_KEY_INTLIST:
    case BASE_KEY_TIMELIST:
      if (!bag)
        {
          *(GArray **) field = v.a;
          return;
        }
      base_values_set_list (bag, dotted, v.a);
      g_array_unref (v.a);
      return;
    }
}

static gboolean
resolve_int (SimConfig *c, const KeyDef *k, const char *text, const char *file,
             GError **error)
{
  char *end = NULL;
  /* an integer key with choices also takes their names (channels = auto) */
  for (const BaseChoice *ch = k->choices; ch && ch->name; ch++)
    if (g_ascii_strcasecmp (text, ch->name) == 0)
      {
        store (c, k, (Resolved) { .i = ch->value });
        return TRUE;
      }
  errno = 0;
  gint64 v = g_ascii_strtoll (text, &end, 10);
  while (end && g_ascii_isspace (*end))
    end++;
  if (end == text || *end != '\0' || errno != 0)
    {
      if (k->choices && k->choices[0].name)
        return fail (error, file, k, "'%s' is not an integer or %s", text,
                     k->choices[0].name);
      return fail (error, file, k, "'%s' is not an integer", text);
    }
  if ((double) v < k->min || (double) v > k->max)
    return fail (error, file, k, "%s is out of range; use a value from %.0f to %.0f%s%s",
                 text, k->min, k->max, k->choices && k->choices[0].name ? " or " : "",
                 k->choices && k->choices[0].name ? k->choices[0].name : "");
  store (c, k, (Resolved) { .i = v });
  return TRUE;
}

static gboolean
resolve_quantity (SimConfig *c, const KeyDef *k, const char *text, const char *file,
                  GError **error)
{
  double v;
  const char *why = NULL;
  if (!sim_parse_quantity (text, k->unit, &v, &why))
    return fail (error, file, k, "'%s' is not valid; expected %s", text, why);
  gboolean low = (k->open & OPEN_MIN) ? v <= k->min : v < k->min;
  gboolean high = (k->open & OPEN_MAX) ? v >= k->max : v > k->max;
  if (low || high)
    {
      if (k->max >= BIG)
        return fail (error, file, k, "%s must be %s %g%s%s", text,
                     (k->open & OPEN_MIN) ? "greater than" : "at least", k->min,
                     k->unit ? " " : "", sim_unit_base_name (k->unit));
      return fail (error, file, k, "%s must be in %s%g, %g%s", text,
                   (k->open & OPEN_MIN) ? "(" : "[", k->min, k->max,
                   (k->open & OPEN_MAX) ? ")" : "]");
    }
  store (c, k, (Resolved) { .d = v });
  return TRUE;
}

/* An ENUM stores its choice's value, a NAME the registry's spelling. */
static gboolean
resolve_choice (SimConfig *c, const KeyDef *k, const char *text, const char *file,
                GError **error)
{
  if (k->type == BASE_KEY_NAME)
    {
      for (const void *const *e = k->entries (); *e; e++)
        if (g_ascii_strcasecmp (text, entry_name (*e)) == 0)
          {
            store (c, k, (Resolved) { .s = entry_name (*e) });
            return TRUE;
          }
    }
  else
    for (const BaseChoice *ch = k->choices; ch->name; ch++)
      if (g_ascii_strcasecmp (text, ch->name) == 0)
        {
          store (c, k, (Resolved) { .i = ch->value });
          return TRUE;
        }
  g_autofree char *l = choice_list (k, ", ");
  BaseSpell sp;
  base_spell_init (&sp, text);
  if (k->type == BASE_KEY_NAME)
    for (const void *const *e = k->entries (); *e; e++)
      base_spell_offer (&sp, entry_name (*e));
  else
    for (const BaseChoice *ch = k->choices; ch->name; ch++)
      base_spell_offer (&sp, ch->name);
  const char *best = base_spell_best (&sp);
  g_autofree char *hint = best ? g_strdup_printf (" did you mean %s?", best) : g_strdup ("");
  return fail (error, file, k, "unknown value '%s';%s use one of: %s", text, hint, l);
}

/* A comma-separated list of integers (INTLIST) or times (TIMELIST). */
static gboolean
resolve_list (SimConfig *c, const KeyDef *k, const char *text, const char *file,
              GError **error)
{
  gboolean ints = k->type == BASE_KEY_INTLIST;
  GArray *a = g_array_new (FALSE, FALSE, ints ? sizeof (int) : sizeof (double));
  store (c, k, (Resolved) { .a = a }); /* c owns it from here, even on an error */
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  for (int i = 0; parts[i]; i++)
    {
      char *t = g_strstrip (parts[i]);
      if (*t == '\0')
        continue;
      if (ints)
        {
          char *end = NULL;
          gint64 v = g_ascii_strtoll (t, &end, 10);
          if (end == t || *end != '\0' || v < k->min || v > k->max)
            return fail (error, file, k, "'%s' is not an integer from %.0f to %.0f", t,
                         k->min, k->max);
          int iv = (int) v;
          g_array_append_val (a, iv);
          continue;
        }
      double v;
      const char *why = NULL;
      if (!sim_parse_quantity (t, k->unit, &v, &why))
        return fail (error, file, k, "'%s' is not valid; expected %s", t, why);
      if (v < k->min)
        return fail (error, file, k, "%s must be at least %g %s", t, k->min,
                     sim_unit_base_name (k->unit));
      g_array_append_val (a, v);
    }
  return TRUE;
}

/* Resolves one key's text into c (its field, or c->values). */
static gboolean
resolve_key (SimConfig *c, const KeyDef *k, const char *text, const char *file,
             GError **error)
{
  switch (k->type)
    {
    case BASE_KEY_STRING:
      if (text[0] == '\0' && k->def && k->def[0] == '\0')
        return TRUE; /* an optional text left empty */
      if (text[0] == '\0')
        return fail (error, file, k, "empty value; give a value or remove the key");
      store (c, k, (Resolved) { .s = text });
      return TRUE;
    case BASE_KEY_INT:
      return resolve_int (c, k, text, file, error);
    case BASE_KEY_QUANTITY:
      return resolve_quantity (c, k, text, file, error);
    case BASE_KEY_ENUM:
    case BASE_KEY_NAME:
      return resolve_choice (c, k, text, file, error);
    case BASE_KEY_INTLIST:
    case BASE_KEY_TIMELIST:
      return resolve_list (c, k, text, file, error);
    }
  g_assert_not_reached ();
}

/* Replaces the params-row text of "section.key" in c. */
static void
set_param_int (SimConfig *c, const char *dotted, gint64 v)
{
  for (guint i = 0; i < c->param_keys->len; i++)
    if (strcmp (g_ptr_array_index (c->param_keys, i), dotted) == 0)
      {
        g_free (g_ptr_array_index (c->param_values, i));
        g_ptr_array_index (c->param_values, i) = g_strdup_printf ("%" G_GINT64_FORMAT, v);
        return;
      }
}

/* [model] global_batch: strong scaling, the global batch shared out among
 * the data-parallel ranks (the workers, or the policy's data parts: a
 * pipeline's replicas, a tensor-parallel run's groups), which must divide
 * it exactly. */
static gboolean
check_global_batch (SimConfig *c, const char *file, GError **error)
{
  if (c->global_batch == 0)
    return TRUE;
  const KeyDef *k = find_key ("model", "global_batch");
  if (g_hash_table_contains (c->given, "model.batch"))
    return fail (error, file, k,
                 "set together with [model] batch; give either the per-worker batch or the global batch, not both");
  const PolPolicyOps *ops = pol_lookup (c->policy);
  gint64 ranks = ops->data_parts ? MAX (ops->data_parts (c->values, c->workers), 1) : c->workers;
  const char *who = ranks == c->workers ? "workers" : "data-parallel ranks";
  if (c->global_batch % ranks != 0)
    {
      gint64 lo = c->global_batch / ranks * ranks;
      return fail (error, file, k,
                   "%" G_GINT64_FORMAT " samples cannot be shared equally among %" G_GINT64_FORMAT
                   " %s; use a multiple of the %s (e.g. %" G_GINT64_FORMAT " or %"
                   G_GINT64_FORMAT ")", c->global_batch, ranks, who, who,
                   lo > 0 ? lo : ranks, lo + ranks);
    }
  c->batch = c->global_batch / ranks;
  set_param_int (c, "model.batch", c->batch);
  return TRUE;
}

/* A value a policy's validate hook derived shows in the run's params. */
static void
param_resolved (gpointer ctx, const char *name, gint64 v)
{
  set_param_int (ctx, name, v);
}

/* The rules of [policy] kind's registry entry (policies/registry.c). */
static gboolean
check_policy (SimConfig *c, const char *file, GError **error)
{
  PolCheck chk = {
    .values = c->values,
    .workers = c->workers,
    .servers = c->servers,
    .batch = c->batch,
    .n_failures = (int) MAX (c->fail_worker->len, c->fail_at->len),
    .n_server_failures = (int) MAX (c->fail_server->len, c->fail_server_at->len),
    .detect_given = c->fail_detect != 1.0,
    .recover = (PolRecover) c->fail_recover,
    .checkpoint_every = c->fail_checkpoint_every,
    .memory_bandwidth = c->memory_bandwidth,
    .topology = c->topology,
    .math = c->math,
    .resolved = param_resolved,
    .ctx = c,
  };
  g_autoptr (GError) local = NULL;
  if (pol_validate (pol_lookup (c->policy), &chk, &local))
    return TRUE;
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: %s", file, local->message);
  return FALSE;
}

void
sim_server_failures (const SimConfig *c, PolServerFailures *out)
{
  guint ns = c->fail_server->len, na = c->fail_server_at->len;
  int n = (ns == 0 || na == 0) ? 0 : (int) MAX (ns, na);
  PolServerFailure *f = g_new0 (PolServerFailure, MAX (n, 1));
  for (int i = 0; i < n; i++)
    {
      f[i].server = g_array_index (c->fail_server, int, ns == 1 ? 0 : i);
      f[i].at = g_array_index (c->fail_server_at, double, na == 1 ? 0 : i);
      f[i].restart = c->fail_restart;
    }
  *out = (PolServerFailures) { .list = f, .n = n, .detect = c->fail_detect,
                               .recover = (PolRecover) c->fail_recover,
                               .checkpoint_every = c->fail_checkpoint_every };
}

/* The cross-key rules of [failures] server, server_at, detect, recover and
 * checkpoint_every (those that involve replication are ps.c's). */
static gboolean
check_server_failures (SimConfig *c, const char *file, GError **error)
{
  guint ns = c->fail_server->len, na = c->fail_server_at->len;
  if (ns == 0 && na == 0)
    {
      static const char *const keys[] = { "detect", "recover", "checkpoint_every" };
      gboolean given[] = { c->fail_detect != 1.0, c->fail_recover != POL_RECOVER_REINIT,
                           c->fail_checkpoint_every != 0 };
      for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
        if (given[i])
          return fail (error, file, find_key ("failures", keys[i]),
                       "applies only to server crashes; remove it or list them with "
                       "[failures] server and server_at");
      return TRUE;
    }
  if (ns == 0 || na == 0)
    return fail (error, file, find_key ("failures", ns == 0 ? "server" : "server_at"),
                 "missing; a server crash needs both server and server_at, e.g. server = 1 and "
                 "server_at = 2s");
  if (ns != na && ns != 1 && na != 1)
    return fail (error, file, find_key ("failures", "server_at"),
                 "%u times for %u servers; give one time per server (or one server, or one time)",
                 na, ns);
  if (!pol_lookup (c->policy)->server_failures)
    {
      g_autofree char *kinds = pol_server_failure_names ();
      return fail (error, file, find_key ("failures", "server"),
                   "server crashes are simulated by kind = %s only, not %s; remove [failures] "
                   "server or use kind = %s", kinds, c->policy, kinds);
    }
  for (guint i = 0; i < ns; i++)
    if (g_array_index (c->fail_server, int, i) >= c->servers)
      return fail (error, file, find_key ("failures", "server"),
                   "server %d does not exist ([cluster] servers = %" G_GINT64_FORMAT
                   "); list indices from 0 to %" G_GINT64_FORMAT,
                   g_array_index (c->fail_server, int, i), c->servers, c->servers - 1);
  /* replication k >= 2 (partition = range): range r's chain is r, r + 1,
   * ... mod servers, and a takeover needs one of them alive */
  gint64 k = base_values_int (c->values, "policy.replication");
  for (gint64 r = 0; k >= 2 && r < c->servers; r++)
    {
      gint64 dead = 0;
      for (gint64 h = 0; h < k; h++)
        for (guint i = 0; i < ns; i++)
          if (g_array_index (c->fail_server, int, i) == (r + h) % c->servers)
            {
              dead++;
              break;
            }
      if (dead == k)
        return fail (error, file, find_key ("failures", "server"),
                     "every server of the chain of server %" G_GINT64_FORMAT "'s range ([policy] "
                     "replication = %" G_GINT64_FORMAT ") crashes, so no copy is left to take "
                     "it over; crash at most %" G_GINT64_FORMAT " of any %" G_GINT64_FORMAT
                     " neighbouring servers", r, k, k - 1, k);
    }
  if (c->fail_recover == POL_RECOVER_CHECKPOINT && c->fail_checkpoint_every == 0)
    return fail (error, file, find_key ("failures", "checkpoint_every"),
                 "recover = checkpoint needs an interval; set checkpoint_every = N iterations "
                 "(N >= 1)");
  if (c->fail_recover != POL_RECOVER_CHECKPOINT && c->fail_checkpoint_every != 0)
    return fail (error, file, find_key ("failures", "checkpoint_every"),
                 "applies only to recover = checkpoint; remove it or set recover = checkpoint");
  return TRUE;
}

/* The cross-key rules of [failures]. */
static gboolean
check_failures (SimConfig *c, const char *file, GError **error)
{
  guint nw = c->fail_worker->len, na = c->fail_at->len;
  if (!check_server_failures (c, file, error))
    return FALSE;
  if (nw == 0 && na == 0)
    return TRUE;
  if (nw == 0 || na == 0)
    return fail (error, file, find_key ("failures", nw == 0 ? "worker" : "at"),
                 "missing; a failure needs both worker and at, e.g. worker = 3 and at = 1.5s");
  if (nw != na && nw != 1 && na != 1)
    return fail (error, file, find_key ("failures", "at"),
                 "%u times for %u workers; give one time per worker (or one worker, or one time)",
                 na, nw);
  if (!sim_config_check_workers (c, c->fail_worker, "failures", "worker", error))
    return FALSE;
  if (!pol_lookup (c->policy)->failures)
    {
      g_autofree char *kinds = pol_failure_names ();
      return fail (error, file, find_key ("failures", "worker"),
                   "worker failures are simulated by kind = %s only, not %s; remove [failures] or use kind = %s",
                   kinds, c->policy, kinds);
    }
  return TRUE;
}

static gint
compare_times (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* The rules of [failures] mtbf, link_mtbf, job_at and the checkpoint keys
 * (docs/policies.md, "Job failures and checkpoints"): a synchronous kind
 * only, the storage and restart keys required with them and refused
 * without them, the interval auto or a positive time.  The rules that need
 * the model and the topology (the write time, the job's MTBF) are
 * sim_ckpt_validate's (sim/checkpoint.c). */
static gboolean
check_job_failures (SimConfig *c, const char *file, GError **error)
{
  gboolean on = c->fail_mtbf > 0 || c->fail_link_mtbf > 0 || c->fail_job_at->len > 0;
  gboolean is_auto = g_ascii_strcasecmp (c->fail_ckpt_interval, BASE_KEY_AUTO_NAME) == 0;
  if (!on)
    {
      static const char *const keys[] = { "checkpoint_interval", "checkpoint_size",
                                          "checkpoint_bandwidth", "reschedule" };
      gboolean given[] = { !is_auto, c->fail_ckpt_size != 0, c->fail_ckpt_bandwidth != 0,
                           c->fail_reschedule != -1 };
      for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
        if (given[i])
          return fail (error, file, find_key ("failures", keys[i]),
                       "applies only to whole-job failures; remove it or set [failures] mtbf "
                       "(or link_mtbf, or job_at)");
      return TRUE;
    }
  g_array_sort (c->fail_job_at, compare_times);
  const char *which = c->fail_mtbf > 0 ? "mtbf" : c->fail_link_mtbf > 0 ? "link_mtbf" : "job_at";
  if (!pol_lookup (c->policy)->job_failures)
    {
      g_autofree char *kinds = pol_job_failure_names ();
      return fail (error, file, find_key ("failures", which),
                   "whole-job failures and checkpoints are simulated for the synchronous kind = "
                   "%s only, not %s (an asynchronous job goes on without the failed worker: "
                   "use [failures] worker and at there); remove it or use kind = %s",
                   kinds, c->policy, kinds);
    }
  if (c->detail > SIM_DETAIL_ITERATIONS)
    return fail (error, file, find_key ("trace", "detail"),
                 "%s: a job that fails has its iteration and metric rows moved to the "
                 "wall-clock timeline, but not its spans and messages; use detail = iterations "
                 "or summary, or remove [failures] %s", sim_detail_name (c->detail), which);
  if (c->fail_ckpt_bandwidth <= 0)
    return fail (error, file, find_key ("failures", "checkpoint_bandwidth"),
                 "missing; a job that fails writes checkpoints: give the storage's write "
                 "bandwidth, e.g. checkpoint_bandwidth = 100GBps");
  if (c->fail_reschedule < 0)
    return fail (error, file, find_key ("failures", "reschedule"),
                 "missing; a job that fails waits to be placed again before it reads its "
                 "checkpoint back: give that time, e.g. reschedule = 600s");
  c->ckpt_interval = 0;
  if (is_auto)
    return TRUE;
  const char *why = NULL;
  double tau;
  if (!sim_parse_quantity (c->fail_ckpt_interval, SIM_UNIT_TIME, &tau, &why))
    return fail (error, file, find_key ("failures", "checkpoint_interval"),
                 "'%s' is not valid; expected auto or %s", c->fail_ckpt_interval, why);
  if (!(tau >= 1e-6 && tau <= 1e12))
    return fail (error, file, find_key ("failures", "checkpoint_interval"),
                 "%s is out of range; give a time from 1us to 1e12 s, or auto",
                 c->fail_ckpt_interval);
  c->ckpt_interval = tau;
  return TRUE;
}

/* [scenario] tokens and epochs: one train length at most, in tokens only
 * for a model whose sample is made of tokens. */
static gboolean
check_train_length (const SimConfig *c, const char *file, GError **error)
{
  if (c->train_tokens > 0 && c->train_epochs > 0)
    return fail (error, file, find_key ("scenario", "tokens"),
                 "and [scenario] epochs both give the length of training; keep one of them");
  if (c->train_tokens > 0 && !(sim_model_tokens (c) > 0))
    return fail (error, file, find_key ("scenario", "tokens"),
                 "kind = %s has no tokens per sample (only a model whose sample is a "
                 "sequence, one with [model] sequence, has); give the length as [scenario] "
                 "epochs instead", c->model_kind);
  return TRUE;
}

/* [numerics] loss_scale: "dynamic" (from initial_scale, 2^16 by default as
 * PyTorch's GradScaler) or a number in (0, 2^24], into c->loss_scale and
 * c->loss_scale_dynamic. */
static gboolean
parse_loss_scale (SimConfig *c, const char *file, GError **error)
{
  const char *text = c->loss_scale_text ? c->loss_scale_text : "1";
  g_autofree char *t = g_strstrip (g_strdup (text));
  c->loss_scale_dynamic = strcmp (t, "dynamic") == 0;
  if (c->loss_scale_dynamic)
    {
      c->loss_scale = c->initial_scale;
      return TRUE;
    }
  double v;
  const char *why = NULL;
  if (!sim_parse_quantity (t, SIM_UNIT_NONE, &v, &why) || !(v > 0) || v > 16777216.0)
    return fail (error, file, find_key ("numerics", "loss_scale"),
                 "'%s' is neither dynamic nor a number in (0, 2^24]; use e.g. 1024 or dynamic",
                 text);
  c->loss_scale = v;
  return TRUE;
}

/* [numerics]: the keys change the real math only, each where the model,
 * backend and policy can honour it; a key that would change nothing is
 * refused. */
static gboolean
check_numerics (SimConfig *c, const char *file, GError **error)
{
  static const char *const keys[] = { "weights", "gradients", "communication", "activations" };
  int fmt[] = { c->num_weights, c->num_gradients, c->num_communication, c->num_activations };
  const PolPolicyOps *ops = pol_lookup (c->policy);
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      if (fmt[i] == KERN_FORMAT_FP32)
        continue;
      const KeyDef *k = find_key ("numerics", keys[i]);
      if (!c->math)
        return fail (error, file, k,
                     "rounds the real math, but this run does no math ([kernels] backend = "
                     "none, [model] kind = timing or a policy that trains nothing); remove it");
      if (ops->no_numerics)
        return fail (error, file, k,
                     "kind = %s runs its stages' math layer by layer and does not emulate "
                     "formats; remove [numerics] or use kind = allreduce or ps", c->policy);
      if (i == 2 && !ops->wire_numerics && ops->no_wire)
        return fail (error, file, k, "has nothing to round under kind = %s: %s", c->policy,
                     ops->no_wire);
      if (i == 2 && !ops->wire_numerics)
        return fail (error, file, k,
                     "kind = %s does not round what its transfers carry (kind = allreduce, ps, "
                     "local-sgd, gossip and fedavg do); remove it or set it to fp32", c->policy);
      if (i == 3 && !sim_model_kind (c)->rounds_activations)
        return fail (error, file, k,
                     "kind = %s has no hook for its layers' outputs (mlp, softmax, linear and gpt "
                     "have); remove it or set it to fp32", c->model_kind);
      if (i == 3 && strcmp (c->backend, "cpu") != 0)
        return fail (error, file, k,
                     "rounds layer outputs on the CPU backend only, not backend = %s; remove it "
                     "or use [kernels] backend = cpu", c->backend);
      if (i == 3 && base_values_declares (c->values, "policy.tensor")
          && base_values_int (c->values, "policy.tensor") > 1)
        return fail (error, file, k,
                     "is not emulated in tensor-parallel layers ([policy] tensor > 1); remove it "
                     "or set [policy] tensor = 1");
    }
  if (!parse_loss_scale (c, file, error))
    return FALSE;
  if ((c->loss_scale != 1.0 || c->loss_scale_dynamic) && c->num_gradients == KERN_FORMAT_FP32
      && c->num_activations == KERN_FORMAT_FP32)
    return fail (error, file, find_key ("numerics", "loss_scale"),
                 "scales only what gradients or activations round, and both are fp32; remove "
                 "it or set [numerics] gradients");
  if (c->loss_scale_dynamic && c->num_gradients == KERN_FORMAT_FP32)
    return fail (error, file, find_key ("numerics", "loss_scale"),
                 "dynamic watches the gradients for overflow, but [numerics] gradients is fp32; "
                 "set gradients = fp16 (or bf16, fp8-*) or give a fixed number");
  if (c->loss_scale_dynamic && c->num_activations != KERN_FORMAT_FP32)
    return fail (error, file, find_key ("numerics", "loss_scale"),
                 "dynamic is not applied inside the layers that [numerics] activations rounds; "
                 "give a fixed number, or set activations = fp32");
  static const char *const dyn_keys[] = { "growth_interval", "initial_scale" };
  for (guint i = 0; i < G_N_ELEMENTS (dyn_keys); i++)
    if (!c->loss_scale_dynamic
        && g_hash_table_contains (c->given, i == 0 ? "numerics.growth_interval"
                                                   : "numerics.initial_scale"))
      return fail (error, file, find_key ("numerics", dyn_keys[i]),
                   "applies to loss_scale = dynamic only, and the scale is fixed; remove it or "
                   "set loss_scale = dynamic");
  return TRUE;
}

/* [device] precision = fp8 prices the linear layers at their own peak,
 * which it needs, layer by layer (the per-layer model); the fp8 keys
 * price nothing under any other precision. */
static gboolean
check_fp8 (const SimConfig *c, const char *file, GError **error)
{
  if (c->precision != SIM_PREC_FP8)
    {
      const char *k = c->fp8_flops > 0 ? "fp8_flops" : c->fp8_efficiency > 0 ? "fp8_efficiency"
                                                                             : NULL;
      if (k)
        return fail (error, file, find_key ("device", k),
                     "prices fp8 matrix products, but [device] precision is not fp8; set "
                     "precision = fp8 or remove %s", k);
      return TRUE;
    }
  if (!(c->fp8_flops > 0))
    return fail (error, file, find_key ("device", "fp8_flops"),
                 "precision = fp8 runs the linear layers at the fp8 peak, which is not set; "
                 "set fp8_flops (e.g. 1979TFLOPS for an H100 SXM5), a [cluster] device with "
                 "fp8 (h100), or precision = bf16");
  if (c->memory_bandwidth <= 0 && c->step_time < 0)
    return fail (error, file, find_key ("device", "precision"),
                 "fp8 prices the linear layers apart from the rest, layer by layer, which needs "
                 "[device] memory_bandwidth (the per-layer model); set it (or a catalog "
                 "[cluster] device) or use precision = bf16");
  return TRUE;
}

/* Rules that involve more than one key. */
/* The host keys ([cluster] host_cores, [model] input_time, loader_workers,
 * framework_time: docs/compute.md) only where they price something: the
 * loaders need cores to share and a cost per sample to spend, and the
 * modelled step to overlap; a pipeline prices its micro-batches layer by
 * layer and a collective has no step, so both would ignore them. */
static gboolean
check_host (const SimConfig *c, const char *file, GError **error)
{
  if (c->input_time > 0 && c->host_cores == 0)
    return fail (error, file, find_key ("model", "input_time"),
                 "needs [cluster] host_cores, the CPU cores of a server that its GPUs' loaders "
                 "share; set host_cores (e.g. 40 for a DGX-1) or remove input_time");
  if (c->host_cores > 0 && c->input_time == 0)
    return fail (error, file, find_key ("cluster", "host_cores"),
                 "shares the cores among data loaders, but [model] input_time is 0 (input "
                 "costs nothing); set input_time (CPU time per sample on one core) or remove "
                 "host_cores");
  if (c->loader_workers > 0 && c->input_time == 0)
    return fail (error, file, find_key ("model", "loader_workers"),
                 "needs [model] input_time and [cluster] host_cores (the loaders' cost and "
                 "cores); set both or remove loader_workers");
  if (c->fusion != SIM_FUSION_NONE && (c->memory_bandwidth <= 0 || c->step_time >= 0))
    return fail (error, file, find_key ("model", "fusion"),
                 "fusion saves memory traffic, which this run does not price (%s); set "
                 "[device] memory_bandwidth (or a catalog [cluster] device) or remove fusion",
                 c->step_time >= 0 ? "[device] step_time fixes the step"
                                   : "[device] memory_bandwidth is 0");
  const char *host_key = c->input_time > 0 ? "input_time"
                         : c->framework_time > 0 ? "framework_time" : NULL;
  if (!host_key)
    return TRUE;
  const PolPolicyOps *ops = pol_lookup (c->policy);
  if (c->measured && c->step_time < 0)
    return fail (error, file, find_key ("model", host_key),
                 "prices the host beside the modelled step, but [device] compute_time = "
                 "measured times the host's real step; use compute_time = model or remove %s",
                 host_key);
  if (ops->no_model || ops->layer_steps)
    return fail (error, file, find_key ("model", host_key),
                 "[policy] kind = %s %s, so the host model would be ignored; use kind = "
                 "allreduce (or another data-parallel kind) or remove %s",
                 c->policy, ops->no_model ? "runs no training step"
                                          : "prices its micro-batches layer by layer",
                 host_key);
  return TRUE;
}

/* [cluster] device_mix and [policy] balance: where they mean something. */
static gboolean
check_devices (const SimConfig *c, const char *file, GError **error)
{
  gboolean measured = c->measured && c->step_time < 0;
  if (c->devices && measured)
    return fail (error, file, find_key ("cluster", "device_mix"),
                 "prices each worker's step on its own device, but [device] compute_time = measured "
                 "times the host instead; use compute_time = model or remove device_mix");
  if (c->balance == SIM_BALANCE_NONE)
    return TRUE;
  const KeyDef *k = find_key ("policy", "balance");
  if (!c->devices)
    return fail (error, file, k,
                 "speed shares the batch among devices of several kinds, but [cluster] device_mix is not set; "
                 "set device_mix (e.g. a100 x 8, h100 x 8) or remove balance");
  if (!pol_lookup (c->policy)->balances)
    return fail (error, file, k,
                 "kind = %s gives every worker the same batch; remove balance (kinds allreduce and ps "
                 "share the batch by speed)", c->policy);
  if (base_values_int (c->values, "policy.tensor") > 1
      || base_values_int (c->values, "policy.experts") > 1)
    return fail (error, file, k,
                 "speed shares the batch among data-parallel workers, but [policy] tensor or experts "
                 "groups them; set tensor = 1 and experts = 1, or remove balance");
  return TRUE;
}

static gboolean
check_cross (SimConfig *c, const char *file, GError **error)
{
  if (c->servers == 0)
    c->servers = c->workers;
  /* the hosts the policy places on the network: workers, and servers
   * where it has them */
  g_autoptr (GPtrArray) hosts = pol_lookup (c->policy)->host_names ((int) c->workers,
                                                                    (int) c->servers);
  if (hosts->len > SIM_MAX_HOSTS)
    return fail (error, file, find_key ("cluster", "servers"),
                 "%" G_GINT64_FORMAT " workers and %" G_GINT64_FORMAT " servers make %u hosts, "
                 "more than the %d a run may have; use fewer servers (e.g. servers = 1) or workers",
                 c->workers, c->servers, hosts->len, SIM_MAX_HOSTS);
  gint64 placed = (gint64) hosts->len - c->workers;  /* servers on the network */
  if (placed > 0 && c->workers * placed > SIM_MAX_SERVER_PAIRS)
    return fail (error, file, find_key ("cluster", "servers"),
                 "%" G_GINT64_FORMAT " workers and %" G_GINT64_FORMAT " servers make %"
                 G_GINT64_FORMAT " worker-server pairs, each exchanging a shard every step, "
                 "more than the %d a run may have; use fewer servers (e.g. servers = 1) or workers",
                 c->workers, placed, c->workers * placed, SIM_MAX_SERVER_PAIRS);
  if (!check_global_batch (c, file, error))
    return FALSE;
  const KernBackendEntry *be = kern_backend_lookup (c->backend);
  /* math runs where the backend has kernels, the policy trains and the
   * model kind is not a timing table */
  c->math = be->create != NULL && !pol_lookup (c->policy)->no_model && sim_model_kind (c)->math;
  if (c->reproducible == SIM_REPRODUCIBLE_TRUE && !be->can_reproduce)
    return fail (error, file, find_key ("kernels", "reproducible"),
                 "the %s backend cannot give the same bits on every machine; "
                 "set reproducible = false (or auto) or use backend = cpu", c->backend);
  c->reproducible_math = c->reproducible == SIM_REPRODUCIBLE_AUTO
                         ? be->can_reproduce : c->reproducible == SIM_REPRODUCIBLE_TRUE;
  if (!check_numerics (c, file, error))
    return FALSE;
  if (!sim_apply_catalog (c, file, error) || !check_devices (c, file, error))
    return FALSE;
  if (!check_fp8 (c, file, error))
    return FALSE;
  if (!sim_model_shape_apply (c, file, error) || !sim_model_kind_validate (c, file, error)
      || !check_policy (c, file, error) || !check_train_length (c, file, error))
    return FALSE;
  if (!sim_stragglers_validate (c, error))
    return FALSE;
  if (!check_host (c, file, error))
    return FALSE;
  if (!check_failures (c, file, error) || !check_job_failures (c, file, error))
    return FALSE;
  if (c->db)
    {
      g_autofree char *dir = g_path_get_dirname (c->db);
      if (!g_file_test (dir, G_FILE_TEST_IS_DIR))
        return fail (error, file, find_key ("trace", "db"),
                     "directory '%s' does not exist; create it or choose another path", dir);
    }
  if (c->target_loss > 0 && !c->math)
    return fail (error, file, find_key ("scenario", "target_loss"),
                 "needs the loss, but this run does no math ([kernels] backend = none or [model] kind = timing); remove one of them");
  if (c->target_accuracy > 0 && !c->math)
    return fail (error, file, find_key ("scenario", "target_accuracy"),
                 "needs the accuracy, but this run does no math ([kernels] backend = none or [model] kind = timing); remove one of them");
  return TRUE;
}

/* [scenario] name names the default database results/NAME.db, and a
 * [trace] db written in the scenario file may only name one inside results/:
 * nothing in a file someone else wrote makes dtsim write elsewhere
 * (docs/security.md).  A db given with --set is the user's own choice. */
static gboolean
check_paths (const SimConfig *c, const char *file, gboolean db_trusted, GError **error)
{
  const char *name = c->scenario_name;
  if (!sim_input_is_one_line (name) || strchr (name, '/'))
    return fail (error, file, find_key ("scenario", "name"),
                 "'%s' holds a '/' or a control character; it names the database "
                 "results/NAME.db, so give a plain name such as my-study", name);
  if (!c->db || db_trusted)
    return TRUE;
  g_auto (GStrv) parts = g_strsplit (c->db, "/", -1);
  gboolean inside = !g_path_is_absolute (c->db) && strcmp (parts[0], "results") == 0
                    && parts[1] != NULL;
  for (int i = 1; inside && parts[i]; i++)
    inside = strcmp (parts[i], "..") != 0 && strcmp (parts[i], ".") != 0 && parts[i][0] != '\0';
  if (!inside)
    return fail (error, file, find_key ("trace", "db"),
                 "'%s' is outside results/; a scenario file may only name a database "
                 "inside results/ (e.g. results/out.db): give other paths with -o", c->db);
  return TRUE;
}

/* Every scenario key is swept at most once (alone or in a joint key), and
 * [trace] db not at all: one run writes one database. */
static gboolean
check_sweep_keys (char **sweep_keys, const char *path, GError **error)
{
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  for (int i = 0; sweep_keys && sweep_keys[i]; i++)
    {
      g_auto (GStrv) names = g_strsplit (sweep_keys[i], "/", -1);
      for (int q = 0; names[q]; q++)
        {
          char *n = g_strstrip (names[q]);
          if (strcmp (n, "trace.db") == 0)
            return fail (error, path, NULL,
                         "[sweep] %s: trace.db cannot be swept, every point of a run goes "
                         "into one database; remove it from [sweep]", sweep_keys[i]);
          const char *first = g_hash_table_lookup (seen, n);
          if (first)
            return fail (error, path, NULL,
                         "[sweep] %s: %s is already swept by [sweep] %s; sweep each key once",
                         sweep_keys[i], n, first);
          g_hash_table_insert (seen, g_strdup (n), g_strdup (sweep_keys[i]));
        }
    }
  return TRUE;
}

/* Resolves the key file kf (sweep already applied) into a config. */
static SimConfig *
resolve (GKeyFile *kf, const char *file, GPtrArray *swept, gboolean db_trusted,
         GError **error)
{
  g_autoptr (SimConfig) c = g_new0 (SimConfig, 1);
  c->param_keys = g_ptr_array_new_with_free_func (g_free);
  c->param_values = g_ptr_array_new_with_free_func (g_free);
  c->swept = g_ptr_array_ref (swept);
  c->file = g_strdup (file);
  c->given = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  c->values = base_values_new (key_table ());
  gboolean job = g_key_file_has_group (kf, "job");
  for (guint i = 0; i < N_KEYS; i++)
    {
      const KeyDef *k = KEY (i);
      if (!job && strcmp (k->section, "job") == 0)
        continue; /* a job's own keys: only in a [job NAME] section */
      g_autofree char *given = g_key_file_get_value (kf, k->section, k->key, NULL);
      g_autofree char *text = NULL;
      if (given)
        g_hash_table_add (c->given, g_strdup_printf ("%s.%s", k->section, k->key));
      if (given)
        text = g_strstrip (g_strdup (given));
      else if (k->def)
        text = g_strdup (k->def);
      else if (strcmp (k->key, "name") == 0)
        {
          g_autofree char *base = g_path_get_basename (file);
          char *dot = strrchr (base, '.');
          if (dot && dot != base)
            *dot = '\0';
          text = g_strdup (base);
        }
      else
        continue; /* derived later ([trace] db) */
      if (!resolve_key (c, k, text, file, error))
        return NULL;
      g_ptr_array_add (c->param_keys, g_strdup_printf ("%s.%s", k->section, k->key));
      g_ptr_array_add (c->param_values, g_strdup (text));
    }
  if (!check_paths (c, file, db_trusted, error) || !check_cross (c, file, error))
    return NULL;
  if (!c->db)
    c->db = g_strdup_printf ("results/%s.db", c->scenario_name);
  GString *name = g_string_new (c->scenario_name);
  for (guint i = 0; i < swept->len; i++)
    g_string_append_printf (name, " %s", (char *) g_ptr_array_index (swept, i));
  c->name = g_string_free (name, FALSE);
  return g_steal_pointer (&c);
}

/* A sweep of joined keys ("a/b = 1/x, 2/y") one of whose keys, `dotted`,
 * an override fixes: the sweep keeps its other keys, with their distinct
 * values in order ("b = x, y"), or goes when none is left. */
static void
drop_from_joined_sweeps (GKeyFile *kf, const char *dotted)
{
  g_auto (GStrv) keys = g_key_file_get_keys (kf, "sweep", NULL, NULL);
  for (int i = 0; keys && keys[i]; i++)
    {
      if (!strchr (keys[i], '/'))
        continue;
      g_auto (GStrv) names = g_strsplit (keys[i], "/", -1);
      int drop = -1, n = (int) g_strv_length (names);
      for (int j = 0; j < n; j++)
        if (strcmp (g_strstrip (names[j]), dotted) == 0)
          drop = j;
      if (drop < 0)
        continue;
      g_autofree char *v = g_key_file_get_value (kf, "sweep", keys[i], NULL);
      g_key_file_remove_key (kf, "sweep", keys[i], NULL);
      if (n == 1)
        continue;
      g_auto (GStrv) points = g_strsplit (v ? v : "", ",", -1);
      g_autoptr (GPtrArray) kept = g_ptr_array_new_with_free_func (g_free);
      for (int p = 0; points[p]; p++)
        {
          g_auto (GStrv) vals = g_strsplit (g_strstrip (points[p]), "/", -1);
          if ((int) g_strv_length (vals) != n)
            continue; /* malformed: the sweep's own check names it */
          GString *rest = g_string_new (NULL);
          for (int j = 0; j < n; j++)
            if (j != drop)
              g_string_append_printf (rest, "%s%s", rest->len ? "/" : "", g_strstrip (vals[j]));
          gboolean seen = FALSE;
          for (guint q = 0; q < kept->len && !seen; q++)
            seen = strcmp (g_ptr_array_index (kept, q), rest->str) == 0;
          if (seen)
            g_string_free (rest, TRUE);
          else
            g_ptr_array_add (kept, g_string_free (rest, FALSE));
        }
      GString *name = g_string_new (NULL);
      for (int j = 0; j < n; j++)
        if (j != drop)
          g_string_append_printf (name, "%s%s", name->len ? "/" : "", names[j]);
      g_ptr_array_add (kept, NULL);
      g_autofree char *joined = g_strjoinv (", ", (char **) kept->pdata);
      g_key_file_set_value (kf, "sweep", name->str, joined);
      g_string_free (name, TRUE);
    }
}

/* Applies one "section.key=value" override to kf (and its sweep). */
static gboolean
apply_set (GKeyFile *kf, const char *set, GError **error)
{
  if (!sim_input_is_one_line (set))
    return fail (error, "--set", NULL,
                 "'%s' holds a control character (a newline or tab); give section.key=value on one line",
                 set);
  const char *eq = strchr (set, '=');
  g_autofree char *lhs = eq ? g_strndup (set, eq - set) : NULL;
  g_autofree char *section = NULL, *key = NULL;
  if (!eq || !split_dotted (g_strstrip (lhs), &section, &key))
    return fail (error, "--set", NULL,
                 "'%s' is not section.key=value; write e.g. --set network.bandwidth=25Gbps", set);
  if (strcmp (section, "sweep") == 0)
    {
      if (!valid_sweep_key (key))
        return fail (error, "--set", NULL,
                     "'%s' does not name a scenario key to sweep; write --set sweep.section.key=a,b", set);
      g_key_file_set_value (kf, "sweep", key, eq + 1);
      return TRUE;
    }
  if (!find_key (section, key))
    {
      g_autofree char *dotted = g_strdup_printf ("%s.%s", section, key);
      g_autofree char *hint = suggest_dotted (dotted);
      return fail (error, "--set", NULL,
                   "unknown key [%s] %s;%s see docs/scenarios.md for the keys", section, key,
                   hint);
    }
  g_key_file_set_value (kf, section, key, eq + 1);
  /* a fixed value wins over a sweep of the same key, alone or joined */
  g_autofree char *dotted = g_strdup_printf ("%s.%s", section, key);
  g_key_file_remove_key (kf, "sweep", dotted, NULL);
  drop_from_joined_sweeps (kf, dotted);
  return TRUE;
}

/* Whether a [job NAME] section may set "section.key": the keys of what a
 * job is (its model, policy, devices, stragglers, numerics, kernels, its
 * workers and its length), not those of the shared cluster ([network],
 * [trace], placement) nor whole-job [failures]. */
static gboolean
job_may_set (const char *section, const char *key)
{
  static const char *const sections_ok[] = {
    "model", "policy", "device", "stragglers", "numerics", "kernels", NULL };
  static const char *const keys_ok[] = {
    "cluster.workers", "cluster.servers", "cluster.device", "cluster.devices",
    "scenario.iterations", "scenario.target_loss", "scenario.target_accuracy", NULL };
  g_autofree char *dotted = g_strdup_printf ("%s.%s", section, key);
  return g_strv_contains (sections_ok, section) || g_strv_contains (keys_ok, dotted);
}

/* Checks one [job NAME] section: its name, and that each key is one of a
 * job's own (arrival, priority, hosts) or a "section.key" a job may set. */
static gboolean
check_job_section (GKeyFile *kf, const char *group, const char *path, GError **error)
{
  const char *name = group[3] ? group + 4 : "";
  gsize len = strlen (name);
  gboolean ok = len >= 1 && len <= SIM_MAX_JOB_NAME;
  for (gsize i = 0; ok && i < len; i++)
    ok = g_ascii_isalnum (name[i]) || name[i] == '_' || name[i] == '-';
  if (!ok)
    {
      g_autofree char *shown = sim_input_printable (group);
      return fail (error, path, NULL,
                   "[%s]: a job section is [job NAME], NAME of 1 to %d letters, digits, _ or -;"
                   " e.g. [job train-a]", shown, SIM_MAX_JOB_NAME);
    }
  g_auto (GStrv) ks = g_key_file_get_keys (kf, group, NULL, NULL);
  for (int j = 0; ks[j]; j++)
    {
      g_autofree char *sec = NULL, *key = NULL;
      if (!strchr (ks[j], '.'))
        {
          if (find_key ("job", ks[j]))
            continue;
          return fail (error, path, NULL,
                       "[%s] %s: unknown key; a job's own keys are arrival, priority and hosts,"
                       " and it sets other keys as section.key (e.g. model.kind = mlp)",
                       group, ks[j]);
        }
      if (!split_dotted (ks[j], &sec, &key) || !find_key (sec, key)
          || strcmp (sec, "job") == 0 || strcmp (sec, "sweep") == 0)
        {
          g_autofree char *hint = suggest_dotted (ks[j]);
          return fail (error, path, NULL, "[%s] %s: not a scenario key;%s write section.key, "
                       "e.g. policy.kind = allreduce", group, ks[j], hint);
        }
      if (!job_may_set (sec, key))
        return fail (error, path, NULL,
                     "[%s] %s: a job cannot set this key, which belongs to the cluster every job"
                     " shares; set [%s] %s outside the job sections", group, ks[j], sec, key);
    }
  return TRUE;
}

/* Refuses a section or key that is not in the key table (and a [sweep] key
 * that names none). */
static gboolean
check_known (GKeyFile *kf, const char *path, GError **error)
{
  g_auto (GStrv) groups = g_key_file_get_groups (kf, NULL);
  int n_jobs = 0;
  for (int g = 0; groups[g]; g++)
    {
      if (g_str_has_prefix (groups[g], "job ") || strcmp (groups[g], "job") == 0)
        {
          if (!check_job_section (kf, groups[g], path, error))
            return FALSE;
          if (++n_jobs > SIM_MAX_JOBS)
            return fail (error, path, NULL, "[%s]: more than %d jobs; a scenario holds at most "
                         "%d [job NAME] sections", groups[g], SIM_MAX_JOBS, SIM_MAX_JOBS);
          continue;
        }
      if (!known_section (groups[g]))
        {
          g_autofree char *l = list_sections ();
          g_autofree char *hint = suggest_key (NULL, groups[g]);
          return fail (error, path, NULL, "unknown section [%s];%s sections are %s", groups[g],
                       hint, l);
        }
      g_auto (GStrv) ks = g_key_file_get_keys (kf, groups[g], NULL, NULL);
      for (int j = 0; ks[j]; j++)
        {
          if (strcmp (groups[g], "sweep") == 0)
            {
              if (!valid_sweep_key (ks[j]))
                {
                  g_autofree char *hint = strchr (ks[j], '/') ? g_strdup ("")
                                                             : suggest_dotted (ks[j]);
                  return fail (error, path, NULL,
                               "[sweep] %s: not a scenario key;%s sweep keys are written section.key (several joined by /), e.g. policy.consistency",
                               ks[j], hint);
                }
              continue;
            }
          if (!find_key (groups[g], ks[j]))
            {
              g_autofree char *l = list_keys_of (groups[g]);
              g_autofree char *hint = suggest_key (groups[g], ks[j]);
              return fail (error, path, NULL, "[%s] %s: unknown key;%s keys of [%s] are: %s",
                           groups[g], ks[j], hint, groups[g], l);
            }
        }
    }
  return TRUE;
}

/* The values of each [sweep] key (a GStrv each, empty values dropped) into
 * `values`, and the number of points of their product into *points. */
static gboolean
sweep_values (GKeyFile *kf, char **sweep_keys, const char *path, GPtrArray *values,
              gsize *points, GError **error)
{
  *points = 1;
  for (guint i = 0; sweep_keys && sweep_keys[i]; i++)
    {
      g_autofree char *v = g_key_file_get_value (kf, "sweep", sweep_keys[i], NULL);
      GStrv parts = g_strsplit (v, ",", -1);
      guint n = 0;
      for (guint j = 0; parts[j]; j++)
        {
          g_strstrip (parts[j]);
          if (parts[j][0] != '\0')
            {
              char *t = parts[j];
              parts[j] = parts[n];
              parts[n++] = t;
            }
        }
      for (guint j = n; parts[j]; j++)
        {
          g_free (parts[j]);
          parts[j] = NULL;
        }
      g_ptr_array_add (values, parts);
      if (n == 0)
        return fail (error, path, NULL, "[sweep] %s: no values; give comma-separated values",
                     sweep_keys[i]);
      if (*points > SIM_MAX_SWEEP_POINTS / n)
        return fail (error, path, NULL,
                     "[sweep] %s: the sweep has more than %d points (the most one run holds); "
                     "sweep fewer values or split the study into several files",
                     sweep_keys[i], SIM_MAX_SWEEP_POINTS);
      *points *= n;
    }
  return TRUE;
}

/* A job's error `e` (about key file jk, "PATH: [SEC] KEY: why") as the one
 * line a user can act on: a key the [job NAME] section set is named as it
 * wrote it, one it inherits is named with the job. */
static void
job_error (GError **error, GError *e, GKeyFile *kf, const char *group, const char *path)
{
  gsize plen = strlen (path);
  const char *m = e->message;
  const char *close = strncmp (m, path, plen) == 0 && strncmp (m + plen, ": [", 3) == 0
                      ? strchr (m + plen + 3, ']') : NULL;
  const char *colon = close && close[1] == ' ' ? strstr (close, ": ") : NULL;
  if (!colon)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s (in [%s])", m, group);
      return;
    }
  g_autofree char *sec = g_strndup (m + plen + 3, close - (m + plen + 3));
  g_autofree char *key = g_strndup (close + 2, colon - (close + 2));
  g_autofree char *dotted = g_strdup_printf ("%s.%s", sec, key);
  if (strcmp (sec, "job") == 0)
    g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [%s] %s%s", path, group, key, colon);
  else if (g_key_file_has_key (kf, group, dotted, NULL))
    g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [%s] %s%s", path, group, dotted, colon);
  else
    g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: [%s] %s (as [%s] inherits it)%s", path,
                 sec, key, group, colon);
}

/* The jobs of point c ([job NAME] sections of its key file pk): each the
 * file's sections with the job's keys set, resolved as a whole point. */
static gboolean
resolve_jobs (GKeyFile *pk, SimConfig *c, const char *path, GPtrArray *swept,
              gboolean db_trusted, GError **error)
{
  g_auto (GStrv) groups = g_key_file_get_groups (pk, NULL);
  for (int g = 0; groups[g]; g++)
    {
      if (!g_str_has_prefix (groups[g], "job "))
        continue;
      g_autoptr (GKeyFile) jk = g_key_file_new ();
      g_autofree char *data = g_key_file_to_data (pk, NULL, NULL);
      g_key_file_load_from_data (jk, data, (gsize) -1, G_KEY_FILE_NONE, NULL);
      for (int h = 0; groups[h]; h++)
        if (g_str_has_prefix (groups[h], "job "))
          g_key_file_remove_group (jk, groups[h], NULL);
      g_key_file_set_value (jk, "job", "arrival", "0");
      g_auto (GStrv) ks = g_key_file_get_keys (pk, groups[g], NULL, NULL);
      for (int j = 0; ks[j]; j++)
        {
          g_autofree char *v = g_key_file_get_value (pk, groups[g], ks[j], NULL);
          g_autofree char *sec = NULL, *key = NULL;
          if (split_dotted (ks[j], &sec, &key))
            g_key_file_set_value (jk, sec, key, v);
          else
            g_key_file_set_value (jk, "job", ks[j], v);
        }
      g_autoptr (GError) local = NULL;
      SimConfig *jc = resolve (jk, path, swept, db_trusted, &local);
      if (!jc)
        {
          job_error (error, local, pk, groups[g], path);
          return FALSE;
        }
      SimJob *job = g_new0 (SimJob, 1);
      job->name = g_strdup (groups[g] + 4);
      job->c = jc;
      job->arrival = base_values_double (jc->values, "job.arrival");
      job->priority = base_values_int (jc->values, "job.priority");
      const GArray *hosts = base_values_list (jc->values, "job.hosts");
      if (hosts && hosts->len)
        job->hosts = g_array_copy ((GArray *) hosts);
      if (!c->jobs)
        c->jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) sim_job_free);
      g_ptr_array_add (c->jobs, job);
    }
  return TRUE;
}

/* Sets job j's key "job.KEY" to `value` (text `text`): its value and
 * its params row. */
static void
set_job_key (SimJob *j, const char *key, const char *text)
{
  g_autofree char *name = g_strdup_printf ("job.%s", key);
  for (guint i = 0; i < j->c->param_keys->len; i++)
    if (strcmp (g_ptr_array_index (j->c->param_keys, i), name) == 0)
      {
        g_free (j->c->param_values->pdata[i]);
        j->c->param_values->pdata[i] = g_strdup (text);
        return;
      }
  g_ptr_array_add (j->c->param_keys, g_steal_pointer (&name));
  g_ptr_array_add (j->c->param_values, g_strdup (text));
}

/* One line error of the arrival trace `csv`: "CSV line N column K (what):
 * why; fix" (column 0: the line as a whole). */
static gboolean
arrivals_error (GError **error, const char *csv, int line, int column, const char *fmt, ...)
  G_GNUC_PRINTF (5, 6);

static gboolean
arrivals_error (GError **error, const char *csv, int line, int column, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (column > 0)
    g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s line %d column %d: %s", csv, line,
                 column, msg);
  else
    g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s line %d: %s", csv, line, msg);
  return FALSE;
}

/* The job of `jobs` called `name` (its index in *idx), or NULL with *error
 * naming line ln of `csv` and the name meant. */
static SimJob *
arrivals_job (GPtrArray *jobs, const char *name, const char *csv, int ln, guint *idx,
              GError **error)
{
  BaseSpell sp;
  base_spell_init (&sp, name);
  for (guint j = 0; j < jobs->len; j++)
    {
      SimJob *o = g_ptr_array_index (jobs, j);
      if (strcmp (o->name, name) == 0)
        {
          *idx = j;
          return o;
        }
      base_spell_offer (&sp, o->name);
    }
  g_autofree char *shown = sim_input_printable (name);
  if (strlen (shown) > SIM_MAX_JOB_NAME + 8)
    strcpy (shown + SIM_MAX_JOB_NAME, "...");
  const char *best = base_spell_best (&sp);
  g_autofree char *hint = best ? g_strdup_printf (" did you mean %s?", best) : g_strdup ("");
  arrivals_error (error, csv, ln, 1, "job: no [job %s] in the scenario;%s name one of its"
                  " [job NAME] sections", shown, hint);
  return NULL;
}

gboolean
sim_arrivals_apply (GPtrArray *jobs, const char *text, const char *csv, GError **error)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", SIM_ARRIVALS_MAX_LINES + 1);
  gboolean header = FALSE;
  g_autofree gboolean *seen = g_new0 (gboolean, jobs->len);
  for (int i = 0; lines[i]; i++)
    {
      int ln = i + 1;
      if (i == SIM_ARRIVALS_MAX_LINES)
        return arrivals_error (error, csv, ln, 0, "more than %d lines; an arrival trace holds"
                               " a header and a line per job", SIM_ARRIVALS_MAX_LINES);
      if (strlen (lines[i]) > SIM_ARRIVALS_MAX_LINE)
        return arrivals_error (error, csv, ln, 0, "a line of more than %d characters; write"
                               " job,arrival[,priority]", SIM_ARRIVALS_MAX_LINE);
      char *l = g_strstrip (lines[i]);
      if (!*l || l[0] == '#')
        continue;
      if (!sim_input_is_one_line (l))
        return arrivals_error (error, csv, ln, 0, "a control character; write plain"
                               " job,arrival[,priority] lines");
      g_auto (GStrv) f = g_strsplit (l, ",", 4);
      int n = (int) g_strv_length (f);
      for (int k = 0; k < n; k++)
        g_strstrip (f[k]);
      if (!header)
        {
          gboolean ok = (n == 2 || n == 3) && g_ascii_strcasecmp (f[0], "job") == 0
                        && g_ascii_strcasecmp (f[1], "arrival") == 0
                        && (n == 2 || g_ascii_strcasecmp (f[2], "priority") == 0);
          if (!ok)
            return arrivals_error (error, csv, ln, 0, "expected the header line"
                                   " job,arrival or job,arrival,priority");
          header = TRUE;
          continue;
        }
      if (n != 2 && n != 3)
        return arrivals_error (error, csv, ln, 0, "expected 2 or 3 fields"
                               " job,arrival[,priority], found %s", n > 3 ? "more" : "1");
      guint idx = 0;
      SimJob *job = arrivals_job (jobs, f[0], csv, ln, &idx, error);
      if (!job)
        return FALSE;
      if (seen[idx])
        return arrivals_error (error, csv, ln, 1, "job: %s has a line already; give each job"
                               " one line", job->name);
      seen[idx] = TRUE;
      double t = 0;
      const char *why = NULL;
      if (!sim_parse_quantity (f[1], SIM_UNIT_TIME, &t, &why) || !isfinite (t) || t < 0
          || t > BIG)
        return arrivals_error (error, csv, ln, 2, "arrival: %s; give the job's start as a"
                               " time >= 0, e.g. 10ms", why ? why : "out of range");
      job->arrival = t;
      base_values_set_double (job->c->values, "job.arrival", t);
      set_job_key (job, "arrival", f[1]);
      if (n == 3)
        {
          char *end = NULL;
          errno = 0;
          gint64 p = g_ascii_strtoll (f[2], &end, 10);
          if (!*f[2] || *end || errno || p < -1000 || p > 1000)
            return arrivals_error (error, csv, ln, 3, "priority: expected a whole number from"
                                   " -1000 to 1000");
          job->priority = p;
          base_values_set_int (job->c->values, "job.priority", p);
          set_job_key (job, "priority", f[2]);
        }
    }
  if (!header)
    return arrivals_error (error, csv, 1, 0, "expected the header line job,arrival or"
                           " job,arrival,priority");
  return TRUE;
}

/* Reads [cluster] arrivals of point c (path relative to the scenario file
 * `path`) into its jobs. */
static gboolean
read_arrivals (SimConfig *c, const char *path, GError **error)
{
  const char *name = base_values_string (c->values, "cluster.arrivals");
  if (!name || !*name)
    return TRUE;
  if (!c->jobs)
    return fail (error, path, NULL, "[cluster] arrivals: an arrival trace sets the arrivals of"
                 " [job NAME] sections, and the scenario has none; add job sections or remove"
                 " the key");
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *csv = g_path_is_absolute (name) ? g_strdup (name)
                                                   : g_build_filename (dir, name, NULL);
  g_autoptr (GError) local = NULL;
  g_autofree char *text = sim_input_read_text (csv, "arrival trace", &local);
  if (!text)
    return fail (error, path, NULL, "[cluster] arrivals: %s", local->message);
  if (!sim_arrivals_apply (c->jobs, text, csv, &local))
    return fail (error, path, NULL, "[cluster] arrivals: %s", local->message);
  return TRUE;
}

/* The config of sweep point p: kf with the sweep's values of that point set
 * (the index of key i is a digit of p in mixed radix, the last key least
 * significant). */
static SimConfig *
sweep_point (GKeyFile *kf, char **sweep_keys, GPtrArray *values, gsize p, const char *path,
             gboolean db_trusted, GError **error)
{
  guint n_sweep = values->len;
  g_autoptr (GKeyFile) pk = g_key_file_new ();
  g_autofree char *data = g_key_file_to_data (kf, NULL, NULL);
  g_key_file_load_from_data (pk, data, (gsize) -1, G_KEY_FILE_NONE, NULL);
  g_key_file_remove_group (pk, "sweep", NULL);
  g_autoptr (GPtrArray) swept = g_ptr_array_new_with_free_func (g_free);
  gsize rem = p;
  g_autofree gsize *idx = g_new0 (gsize, n_sweep + 1);
  for (guint i = n_sweep; i-- > 0;)
    {
      guint n = g_strv_length (g_ptr_array_index (values, i));
      idx[i] = rem % n;
      rem /= n;
    }
  for (guint i = 0; i < n_sweep; i++)
    {
      GStrv parts = g_ptr_array_index (values, i);
      g_auto (GStrv) names = g_strsplit (sweep_keys[i], "/", -1);
      g_auto (GStrv) vals = g_strsplit (parts[idx[i]], "/", -1);
      if (g_strv_length (names) != g_strv_length (vals))
        {
          fail (error, path, NULL,
                "[sweep] %s: value '%s' has %u parts for %u keys; give one value per key, joined by /",
                sweep_keys[i], parts[idx[i]], g_strv_length (vals), g_strv_length (names));
          return NULL;
        }
      for (int q = 0; names[q]; q++)
        {
          g_autofree char *sec = NULL, *key = NULL;
          split_dotted (g_strstrip (names[q]), &sec, &key);
          g_key_file_set_value (pk, sec, key, g_strstrip (vals[q]));
        }
      g_ptr_array_add (swept, g_strdup_printf ("%s=%s", sweep_keys[i], parts[idx[i]]));
    }
  g_autoptr (SimConfig) c = resolve (pk, path, swept, db_trusted, error);
  if (!c || !resolve_jobs (pk, c, path, swept, db_trusted, error)
      || !read_arrivals (c, path, error))
    return NULL;
  return g_steal_pointer (&c);
}

GPtrArray *
sim_scenario_parse (const char *path, const char *const *sets, GError **error)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autoptr (GError) local = NULL;
  g_autofree char *text = sim_input_read_text (path, "scenario file", error);
  if (!text)
    return NULL;
  /* GKeyFile merges a repeated group, keeps the last of a repeated key and
   * lists both in its keys: in a scenario either is a mistake */
  if (!sim_input_check_keyfile (text, path, "merge the two into one", error))
    return NULL;
  if (!g_key_file_load_from_data (kf, text, strlen (text), G_KEY_FILE_NONE, &local))
    {
      /* GLib quotes the offending line, control characters and all */
      g_autofree char *why = sim_input_printable (local->message);
      fail (error, path, NULL, "cannot read scenario: %s", why);
      return NULL;
    }
  /* the database path is the user's own choice when it comes from --set */
  gboolean db_trusted = FALSE;
  g_autoptr (GPtrArray) set_sweeps = g_ptr_array_new_with_free_func (g_free);
  for (int i = 0; sets && sets[i]; i++)
    {
      if (!apply_set (kf, sets[i], error))
        return NULL;
      g_autofree char *lhs = g_strndup (sets[i], strcspn (sets[i], "="));
      g_strstrip (lhs);
      db_trusted = db_trusted || strcmp (lhs, "trace.db") == 0;
      if (g_str_has_prefix (lhs, "sweep."))
        g_ptr_array_add (set_sweeps, g_strdup (lhs + strlen ("sweep.")));
    }
  if (!check_known (kf, path, error))
    return NULL;

  /* sweep: cartesian product, last key fastest */
  g_auto (GStrv) sweep_keys = g_key_file_get_keys (kf, "sweep", NULL, NULL);
  g_autoptr (GPtrArray) values = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
  gsize points;
  if (!check_sweep_keys (sweep_keys, path, error)
      || !sweep_values (kf, sweep_keys, path, values, &points, error))
    return NULL;
  /* a --set sweep crossing the file's own sweep multiplies its points: say
   * so rather than surprise */
  if (set_sweeps->len)
    {
      g_autoptr (GString) own = g_string_new (NULL);
      for (int i = 0; sweep_keys && sweep_keys[i]; i++)
        {
          gboolean from_set = FALSE;
          for (guint j = 0; j < set_sweeps->len; j++)
            from_set = from_set || strcmp (sweep_keys[i], g_ptr_array_index (set_sweeps, j)) == 0;
          if (!from_set)
            g_string_append_printf (own, "%s%s", own->len ? ", " : "", sweep_keys[i]);
        }
      if (own->len)
        g_printerr ("dtsim: --set sweep.%s crosses the file's own [sweep] (%s): %" G_GSIZE_FORMAT
                    " points; --set a key of it to fix it instead\n",
                    (const char *) g_ptr_array_index (set_sweeps, 0), own->str, points);
    }
  g_autoptr (GPtrArray) configs = g_ptr_array_new_with_free_func ((GDestroyNotify) sim_config_free);
  for (gsize p = 0; p < points; p++)
    {
      SimConfig *c = sweep_point (kf, sweep_keys, values, p, path, db_trusted, error);
      if (!c)
        return NULL;
      g_ptr_array_add (configs, c);
    }
  return g_steal_pointer (&configs);
}

/* Each registry entry as " `name`: description;", the description's own
 * final period left out. */
static void
append_entries (GString *out, const void *const *entries)
{
  for (int i = 0; entries[i]; i++)
    {
      const char *const *e = entries[i]; /* name, description, ... */
      gsize n = strlen (e[1]);
      while (n > 0 && e[1][n - 1] == '.')
        n--;
      g_string_append_printf (out, " `%s`: %.*s%s", e[0], (int) n, e[1],
                              entries[i + 1] ? ";" : ".");
    }
}

void
sim_scenario_foreach_key (void (*fn) (const SimKeyInfo *k, gpointer ctx), gpointer ctx)
{
  for (guint i = 0; i < N_KEYS; i++)
    {
      const KeyDef *k = KEY (i);
      const char *type = "text";
      g_autofree char *shown = NULL;
      g_auto (GStrv) choices = NULL;
      switch (k->type)
        {
        case BASE_KEY_INT:
          type = k->choices && k->choices[0].name
                   ? (shown = g_strdup_printf ("integer \\| %s", k->choices[0].name))
                   : "integer";
          break;
        case BASE_KEY_QUANTITY:
          type = k->unit == SIM_UNIT_NONE ? "number" : sim_unit_base_name (k->unit);
          break;
        case BASE_KEY_ENUM:
        case BASE_KEY_NAME:
          {
            g_autofree char *list = choice_list (k, "\n");
            choices = g_strsplit (list, "\n", -1);
            shown = choice_list (k, " \\| ");
            type = shown;
            break;
          }
        case BASE_KEY_INTLIST: type = "list of integers"; break;
        case BASE_KEY_TIMELIST: type = "list of times"; break;
        default: break;
        }
      g_autoptr (GString) doc = g_string_new (k->doc);
      if (k->entries)
        append_entries (doc, k->entries ());
      SimKeyInfo info = { k->section, k->key, type, k->def, doc->str, choices };
      fn (&info, ctx);
    }
}

typedef struct {
  GString *out;
  const char **section;
} ReferenceCtx;

/* One row of the reference, after its section's heading when it opens one. */
static void
reference_row (const SimKeyInfo *k, gpointer data)
{
  ReferenceCtx *rc = data;
  if (!*rc->section || strcmp (*rc->section, k->section) != 0)
    {
      *rc->section = k->section;
      g_string_append_printf (rc->out, "\n### [%s]\n\n| key | type | default | meaning |\n| --- | --- | --- | --- |\n",
                              k->section);
    }
  g_string_append_printf (rc->out, "| `%s` | %s | %s | %s |\n", k->key, k->type,
                          k->def ? (k->def[0] ? k->def : "(empty)") : "(derived)", k->doc);
}

void
sim_scenario_write_reference (GString *out)
{
  /* what every key's value may look like, and how to sweep: docs/scenarios.md
   * holds this text as printed */
  g_string_append (out,
    "## Quantities and units\n"
    "\n"
    "Keys that hold a quantity accept a unit after the number, with or without a\n"
    "space; a bare number is read in the SI base unit.\n"
    "\n"
    "| kind | base unit | examples |\n"
    "| --- | --- | --- |\n"
    "| time | second | `5us`, `2.5 ms`, `1s`, `20ns` |\n"
    "| size | byte | `512`, `64KiB`, `4MB`, `1GiB` (`b` = bits) |\n"
    "| bandwidth | byte/s | `10Gbps` (bits/s), `1.25GBps` (bytes/s) |\n"
    "| compute | FLOP/s | `19.5TFLOPS`, `100GFLOPS` |\n"
    "\n"
    "Decimal prefixes (`n u m k M G T P`) are powers of 1000; binary prefixes (`Ki Mi\n"
    "Gi Ti`) powers of 1024. A unit of another kind (`latency = 5GB`) is an error.\n"
    "\n"
    "## Sweeps and overrides\n"
    "\n"
    "`[sweep]` maps `section.key` to comma-separated values; the runs are the\n"
    "cartesian product, in the order the keys are written, the last key varying\n"
    "fastest. Each run is named `NAME section.key=value ...` and all go into one\n"
    "database.\n"
    "\n"
    "```ini\n"
    "[sweep]\n"
    "policy.consistency = bsp, ssp, async\n"
    "cluster.workers = 4, 8\n"
    "```\n"
    "\n"
    "Keys that only make sense together are swept together: a sweep key may name\n"
    "several keys joined by `/`, and each of its values gives one value per key,\n"
    "joined by `/` the same way.\n"
    "\n"
    "```ini\n"
    "[sweep]\n"
    "policy.kind/cluster.servers/policy.algorithm = ps/1/ring, ps/0/ring, allreduce/1/ring\n"
    "cluster.workers = 2, 4, 8\n"
    "```\n"
    "\n"
    "`--set section.key=value` (repeatable) overrides a key of the file; when that\n"
    "key is swept, the override fixes it and removes it from the sweep (from a\n"
    "sweep of joined keys, which keeps its other keys' distinct values).\n"
    "`--set sweep.section.key=a,b` adds or replaces a sweep; added to a file that\n"
    "has its own `[sweep]`, it crosses with it (`dtsim run` and `dtsim check` say\n"
    "so, with the number of points).\n"
    "\n"
    "## Keys\n");
  const char *section = NULL;
  ReferenceCtx rc = { out, &section };
  sim_scenario_foreach_key (reference_row, &rc);
}
