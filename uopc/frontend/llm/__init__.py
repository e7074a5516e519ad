"""Pretrained language models: checkpoint readers that never run code from a file,
the GPT-2 byte-level BPE tokenizer, GPT-2 and Llama models written with the Tensor API,
and generation with a KV cache.

    checkpoints  Hugging Face model directories (config.json + weights) -> numpy state dicts
    safetensors_file, torch_zip   the two weight formats, read without torch
    bpe          GPT-2's byte-level BPE tokenizer on its encoder.json / vocab.bpe
    gpt2, llama  the two architectures, loading weights by their checkpoint names
    kv_cache     fixed-size key/value buffers: one compiled plan for every decode step
    generate     prefill, then decode token by token (greedy or sampled)
"""
