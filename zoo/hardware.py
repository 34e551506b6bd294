"""Defaults that follow the hardware: mixed precision and XLA ("auto")."""

import platform

import tensorflow as tf

MIXED_PRECISION_CHOICES = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
JIT_COMPILE_CHOICES = ("auto", "true", "false")


def _cpuinfo_field(name):
    """The first value of `name` in /proc/cpuinfo, or None."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(name):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_flags():
    return set((_cpuinfo_field("flags") or "").split())


def cpu_model():
    """The processor's name ("model name" in /proc/cpuinfo), to print beside every timing.

    Examples:
    >>> isinstance(cpu_model(), str)
    True
    """
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def _gpu_compute_capability():
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    details = tf.config.experimental.get_device_details(gpus[0])
    return details.get("compute_capability", (0, 0))


def resolve_mixed_precision(choice="auto"):
    """The dtype policy for `choice`; "auto" picks by hardware.

    GPUs with bfloat16 support (compute capability 8.0+) get mixed_bfloat16,
    older GPUs mixed_float16; CPUs with AMX or AVX-512 BF16 get mixed_bfloat16
    (measured here: about 2x the float32 speed); other CPUs float32.
    """
    if choice not in MIXED_PRECISION_CHOICES:
        raise ValueError(
            f"mixed precision {choice!r} is not one of {', '.join(MIXED_PRECISION_CHOICES)}"
        )
    if choice != "auto":
        return choice
    capability = _gpu_compute_capability()
    if capability is not None:
        return "mixed_bfloat16" if capability >= (8, 0) else "mixed_float16"
    if _cpu_flags() & {"amx_bf16", "avx512_bf16"}:
        return "mixed_bfloat16"
    return "float32"


def resolve_jit_compile(choice="auto"):
    """XLA on for "auto" only with an accelerator: on CPU it measured slower here."""
    if isinstance(choice, bool):
        return choice
    choice = str(choice).lower()
    if choice not in JIT_COMPILE_CHOICES:
        raise ValueError(
            f"jit_compile {choice!r} is not one of {', '.join(JIT_COMPILE_CHOICES)}"
        )
    if choice == "auto":
        return _gpu_compute_capability() is not None
    return choice == "true"
