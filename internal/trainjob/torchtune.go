package trainjob

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// torchtune recipes, the config suffix of each case, and the trainer args
// that select them.
const (
	tuneFullSingleDevice = "full_finetune_single_device"
	tuneFullDistributed  = "full_finetune_distributed"
	tuneLoRASingleDevice = "lora_finetune_single_device"
	tuneLoRADistributed  = "lora_finetune_distributed"

	tuneSuffixFullSingleDevice  = "_full_single_device"
	tuneSuffixFullMultiDevice   = "_full"
	tuneSuffixFullMultiNode     = "_full_multinode"
	tuneSuffixLoRASingleDevice  = "_lora_single_device"
	tuneSuffixQLoRASingleDevice = "_qlora_single_device"
	tuneSuffixLoRADistributed   = "_lora"
	tuneSuffixQLoRADistributed  = "_qlora"

	tuneArgLoRAAttnModules = "model.lora_attn_modules"
	tuneArgQuantizeBase    = "model.quantize_base"
	tuneArgUseDoRA         = "model.use_dora"
)

// tuneRuntimeOwnedConfigs are the config keys a torchtune runtime fixes in
// its command (where the initializers put the model and data); the TrainJob
// may not set them, and they follow the recipe on the command line.
var tuneRuntimeOwnedConfigs = []string{"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"}

// torchTuneArgs completes `tune run`: the rendezvous endpoint when the run
// spans several nodes or devices, the recipe and its config, and the
// runtime's own config overrides.
func torchTuneArgs(p *Plan, nodes int32, procs procsPerNode, gpus int) []string {
	var args []string
	if nodes > 1 || (!procs.auto && procs.count > 1) || (procs.auto && gpus > 1) {
		args = append(args, fmt.Sprintf("--rdzv_endpoint=%s:%d", rendezvousHost(p), TrainerPort))
	}
	recipe, config := torchTuneRecipe(p.TrainJob.Spec.RuntimeRef.Name, p.TrainJob.Spec.Trainer.Args, nodes, procs, gpus)
	args = append(args, recipe, "--config", config)
	return append(args, runtimeTuneOverrides(p)...)
}

// torchTuneRecipe picks the recipe and config for the run's shape: single
// device, LoRA or QLoRA on one node, or full fine-tuning across devices or
// nodes.
func torchTuneRecipe(runtimeName string, trainerArgs []string, nodes int32, procs procsPerNode, gpus int) (string, string) {
	recipe, suffix := tuneFullDistributed, tuneSuffixFullMultiDevice
	singleDevice := (!procs.auto && procs.count == 1) || gpus == 1
	switch {
	case nodes == 1 && singleDevice && usesQLoRA(trainerArgs):
		recipe, suffix = tuneLoRASingleDevice, tuneSuffixQLoRASingleDevice
	case nodes == 1 && singleDevice && usesLoRA(trainerArgs):
		recipe, suffix = tuneLoRASingleDevice, tuneSuffixLoRASingleDevice
	case nodes == 1 && singleDevice:
		recipe, suffix = tuneFullSingleDevice, tuneSuffixFullSingleDevice
	case nodes == 1 && usesQLoRA(trainerArgs):
		recipe, suffix = tuneLoRADistributed, tuneSuffixQLoRADistributed
	case nodes == 1 && usesLoRA(trainerArgs):
		recipe, suffix = tuneLoRADistributed, tuneSuffixLoRADistributed
	case nodes > 1:
		suffix = tuneSuffixFullMultiNode
	}
	return recipe, TorchTuneModel(runtimeName) + suffix
}

// TorchTuneModel is the torchtune model a runtime named
// torchtune-<family>-<size> fine-tunes, e.g. torchtune-llama3.2-1b is
// llama3_2/1B; "" for other names.
func TorchTuneModel(runtimeName string) string {
	parts := strings.Split(runtimeName, "-")
	if len(parts) != 3 {
		return ""
	}
	return strings.ReplaceAll(parts[1], ".", "_") + "/" + strings.ToUpper(parts[2])
}

func usesLoRA(args []string) bool {
	for _, arg := range args {
		if strings.Contains(arg, tuneArgLoRAAttnModules) {
			return true
		}
	}
	return false
}

// usesQLoRA: quantize_base=true without DoRA.
func usesQLoRA(args []string) bool {
	return !argIsTrue(args, tuneArgUseDoRA) && argIsTrue(args, tuneArgQuantizeBase)
}

func argIsTrue(args []string, key string) bool {
	for _, arg := range args {
		name, value, found := strings.Cut(arg, "=")
		if found && strings.Contains(name, key) && strings.EqualFold(strings.TrimSpace(value), "true") {
			return true
		}
	}
	return false
}

// runtimeTuneOverrides are the runtime-owned config settings in the trainer
// node container's command of the runtime template.
func runtimeTuneOverrides(p *Plan) []string {
	overrides := []string{}
	for i, rjob := range p.Spec.ReplicatedJobs {
		if p.PodSets[i].Ancestor != AncestorTrainer {
			continue
		}
		for _, c := range rjob.Template.Spec.Template.Spec.Containers {
			if c.Name != NodeName {
				continue
			}
			for _, word := range c.Command {
				if isRuntimeOwnedTuneConfig(strings.Split(word, "=")[0]) {
					overrides = append(overrides, word)
				}
			}
		}
	}
	return overrides
}

func isRuntimeOwnedTuneConfig(key string) bool {
	for _, owned := range tuneRuntimeOwnedConfigs {
		if key == owned {
			return true
		}
	}
	return false
}

// torchtune models copse's torchtune runtimes may fine-tune, and the one that
// may span several nodes.
var tuneModels = []string{"llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B"}

const tuneMultiNodeModel = "llama3_3/70B"

// validateTorchTune checks a `tune run` TrainJob against what its recipes
// support: a known model, one node unless the model spans nodes, QLoRA only
// where the model supports it, LoRA only on one node, and no runtime-owned
// config in the args.
func validateTorchTune(p *Plan) field.ErrorList {
	var errs field.ErrorList
	trainer := p.TrainJob.Spec.Trainer
	name := p.TrainJob.Spec.RuntimeRef.Name
	namePath := runtimeRefPath.Child("name")
	model := TorchTuneModel(name)
	if !slices.Contains(tuneModels, model) {
		errs = append(errs, field.Invalid(namePath, name, fmt.Sprintf("must have a supported pretrained model, invalid model configured: %v", model)))
	}
	nodes := ptr.Deref(trainer.NumNodes, 1)
	if nodes > 1 && model != tuneMultiNodeModel {
		errs = append(errs, field.Invalid(trainerPath.Child("numNodes"), nodes, fmt.Sprintf("must be 1 for %v model", model)))
	}
	procs := procsPerNode{auto: true}
	if trainer.NumProcPerNode != nil {
		procs = procsPerNode{count: *trainer.NumProcPerNode}
	}
	_, config := torchTuneRecipe(name, trainer.Args, nodes, procs, gpusPerNode(p.resourcesPerNode()))
	if strings.Contains(config, tuneSuffixQLoRADistributed) {
		if model == "qwen2_5/1.5B" {
			errs = append(errs, field.Invalid(namePath, name, fmt.Sprintf("QLoRA is not supported for %v model", model)))
		}
		if !strings.Contains(config, tuneSuffixQLoRASingleDevice) && (model == "llama3_2/1B" || model == "llama3_2/3B") {
			errs = append(errs,
				field.Invalid(trainerPath.Child("numProcPerNode"), procs, fmt.Sprintf("must be auto or 1 for %v model when using QLoRA", model)),
				field.Invalid(trainerPath.Child("resourcesPerNode"), trainer.ResourcesPerNode, fmt.Sprintf("must have gpu resource with value 1 for %v model when using QLoRA", model)))
		}
	}
	if nodes > 1 && (usesLoRA(trainer.Args) || usesQLoRA(trainer.Args)) {
		errs = append(errs, field.Invalid(trainerPath.Child("numNodes"), nodes, "must be 1 when using LoRA or QLoRA"))
	}
	for i, arg := range trainer.Args {
		if key := strings.SplitN(arg, "=", 2)[0]; isRuntimeOwnedTuneConfig(key) {
			errs = append(errs, field.Invalid(trainerPath.Child("args").Index(i), arg, fmt.Sprintf("must not set immutable config %q in trainer args; it is managed by the runtime", key)))
		}
	}
	return errs
}
