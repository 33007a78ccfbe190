# shellcheck shell=bash
# The runs gpu-run.sh's stages share: each model's trainer flags, and step counts, on a GPU or
# (a rehearsal on CPU devices) with small shapes and few steps.

# model_flags MODEL: the trainer flags of lstm_small, lstm_medium or resnet50 (the bench's shapes:
# ResNet-50 at 224 with batch 64 and 1000 classes, as PyTorch's reference builds it).
model_flags() {
  if ((has_gpu)); then
    case $1 in
      lstm_small) echo "--model lstm --config small" ;;
      lstm_medium) echo "--model lstm --config medium" ;;
      resnet50) echo "--model resnet50 --image_size 224 --batch_size 64 --num_classes 1000" ;;
    esac
  else
    case $1 in
      lstm_small) echo "--model lstm --config small --batch_size 2" ;;
      lstm_medium) echo "--model lstm --config medium --batch_size 2" ;;
      resnet50) echo "--model resnet50 --depth 14 --image_size 32 --batch_size 2 --num_classes 1000" ;;
    esac
  fi
}

# The PyTorch reference's shape flags matching model_flags.
torch_shape_flags() {
  if ((has_gpu)); then echo "--device cuda"
  else echo "--device cpu --lstm_batch 2 --resnet_image 32 --resnet_batch 2"; fi
}

# steps GPU_STEPS REHEARSAL_STEPS: the count for this machine.
steps() { if ((has_gpu)); then echo "$1"; else echo "$2"; fi; }

# skip_stage REASON: ends the stage as skipped (run_stage prints the reason).
skip_stage() { echo "$*"; exit 3; }

# trainer_has FLAG: whether this trainer's --help lists --FLAG.
trainer_has() { grep -q -- "--$1\b" "$work/trainer-help.txt"; }
