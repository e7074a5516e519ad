"""Pretrained language models: checkpoint readers that never run code from a file,
the GPT-2 byte-level BPE tokenizer, GPT-2 and Llama models written with the Tensor API,
and generation with a KV cache.

    checkpoints  Hugging Face model directories (config.json + weights) -> numpy state dicts
    torch_zip    PyTorch zip checkpoints, read without torch (safetensors: uopc.frontend)
    gguf_file    llama GGUF files: config, weights (packed and dequantized), metadata
    bpe          byte-level BPE: GPT-2's encoder.json / vocab.bpe, or a GGUF's vocabulary
    weights      weights looked up by checkpoint name, shapes checked
    causal_lm    what both architectures provide: a step's host inputs and its lazy graph
    gpt2, llama  the two architectures, loading weights by their checkpoint names
    attention    scaled dot-product attention with grouped-query heads
    kv_cache     fixed-size key/value buffers: one compiled plan for every decode step
    generate     prefill, then decode token by token (greedy or sampled)
"""
