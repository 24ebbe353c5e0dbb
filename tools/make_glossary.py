"""Generate appendix/glossary.md (术语表) from the project glossary and the chapter sources.

    python tools/make_glossary.py [--glossary ../shared/spec/GLOSSARY.md]

For each term of the glossary's master table (§5) it finds where the book teaches it: the first
occurrence of the Chinese term in the chapter the glossary names (else in any chapter, in reading
order), and links the section label that precedes it. The output is committed; rerun this after
chapters change (tests/test_foundation.py checks that every linked label still exists).
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rows(glossary: Path):
    text = glossary.read_text(encoding="utf-8")
    table = text[text.index("## 5."):]
    for line in table.splitlines():
        if not line.startswith("| ") or line.startswith("| English") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4:
            yield cells[0], cells[1], cells[2], cells[3]


def chapter_sources():
    return {int(p.name[:2]): p for p in sorted((ROOT / "src" / "chapters").glob("[0-9][0-9]_*.md"))}


def where(term_zh: str, chapter: str, sources) -> tuple[str | None, int | None]:
    """(label, chapter number) of the section where ``term_zh`` first appears."""
    probe = re.split(r"\s*[/／（(]\s*", term_zh)[0].strip()
    if not probe:
        return None, None
    order = []
    if chapter.isdigit() and int(chapter) in sources:
        order.append(int(chapter))
    order += [n for n in sorted(sources) if n not in order]
    # prefer the place where the term is introduced with its English name: 术语（English）
    for needle in (probe + "（", probe):
        hit = _first(needle, order, sources)
        if hit:
            return hit
    return None, None


def _first(needle, order, sources):
    for n in order:
        text = sources[n].read_text(encoding="utf-8")
        pos = text.find(needle)
        if pos < 0:
            continue
        labels = list(re.finditer(r"^\((sec-[\w-]+)\)=", text[:pos], re.M))
        if labels:
            return labels[-1].group(1), n
        first = re.search(r"^\((sec-[\w-]+)\)=", text, re.M)
        return (first.group(1) if first else None), n
    return None


def clean(note: str) -> str:
    """Drop remarks about our internal drafts (specs, seed) that mean nothing to a reader."""
    note = re.sub(r"（[^（）]*(spec|seed|d2l|CANON)[^（）]*）", "", note)
    note = re.sub(r"^(seed|d2l-zh 用法)[；。，]?\s*", "", note)
    note = re.sub(r"[^；。]*\bspec\b[^；。]*[；。]?", "", note)
    return note.strip(" ；。")


#: a clause of the project glossary that tells writers how to write, not readers what it means
_RULE = re.compile(r"(不用|不写|不单写|不说|不译|不直译|不作术语|首注|首次|括注|保留英文|跟 ?seed|写法|"
                   r"统一|一律写|用“|写成|写作|按 GLOSSARY|见 §|§\d|别写|不要写|译作|译为|叫法)")


#: reader definitions for terms whose glossary note holds only writing rules (website-review M11)
DEFINITIONS = {
    "Activations": "一层的输入和中间结果（每个 token 一个向量），反向传播要用到它们",
    "Algorithm Bandwidth / Bus Bandwidth": "NCCL 的两种带宽读数：算法带宽 = 数据量 ÷ 耗时；总线带宽再乘上与算法有关的系数，便于和链路带宽比较",
    "AllGather": "集合通信：每个设备拿出自己的一块，结束时每个设备都有全部的块",
    "AllReduce": "集合通信：把各设备上同形状的数组逐元素求和，结果留在每个设备上；等于 ReduceScatter 加 AllGather",
    "AllToAll": "集合通信：每个设备把自己的数组切成 N 块，第 i 块发给第 i 个设备，用来把分片从一个维度挪到另一个维度",
    "Back-of-the-envelope Estimate": "只用几个关键数字、几行算术得出的量级估计",
    "Backward Pass": "训练中从损失往回算每一层梯度的那一半计算，运算量约是前向传播的两倍",
    "Bisection Bandwidth": "把网络切成两半时，穿过切口的所有链路带宽之和，决定 AllToAll 这类操作的上限",
    "Block Matrix Multiplication": "把矩阵切成块，按块相乘再相加；分片矩阵乘法就是它的分布式版本",
    "Cheat Sheet": "把全书常用的数和公式收在一页的附录",
    "Context Length": "一条序列里的 token 数，记作 T 或 S",
    "DCN": "数据中心网络（Data Center Network），连接不同 TPU Pod 的网络，比 ICI 慢得多",
    "Dot Product": "两个等长向量逐元素相乘再求和",
    "Draft Model": "投机解码里先快速猜出几个 token 的小模型",
    "Egress / Ingress Bandwidth": "一个芯片或节点往外发、往里收数据的总带宽",
    "Embedding": "把 token 编号映射成向量的查找表（以及输出端把向量变回词表分数的矩阵）",
    "Expert Capacity": "MoE 里一个专家在一个批次中最多接收的 token 数",
    "Forward Pass": "从输入算到输出（和损失）的那一遍计算",
    "Fusion": "编译器把几个相邻的操作合成一个内核，中间结果不用写回 HBM",
    "Global View / Per-device View": "写程序时看到的是整个数组（全局视图）还是每个设备上的那一块（设备本地视图，shard_map 里）",
    "GQA": "分组查询注意力（Grouped-Query Attention）：几个查询头共用一组 K、V 头，KV 缓存随之变小",
    "Graph Viewer / Memory Viewer / Memory Profile": "XProf 里看计算图、看各缓冲区内存占用、看内存随时间变化的三个视图",
    "Interconnect": "芯片之间传数据的链路和交换网络的统称",
    "jaxpr": "JAX 把 Python 函数追踪后得到的中间表示，再往下编译成 HLO",
    "Kronecker Product": "矩阵的一种乘积：A 的每个元素乘上整个 B 排成的分块矩阵",
    "Layer Norm": "对每个 token 的向量做归一化的层（LLaMA 用的是 RMSNorm）",
    "LLO": "TPU 编译器最底层的指令表示（Low-Level Operations），直接对应硬件单元",
    "logits": "输出层给词表中每个词的未归一化分数，softmax 之后才是概率",
    "lowering": "把高层程序逐级翻译成更低层表示的编译步骤（如 jaxpr → HLO）",
    "Megatron Sharding": "张量并行的一种做法：前馈层第一个矩阵按列、第二个按行切分，中间不用通信",
    "MHA": "多头注意力（Multi-Head Attention）：每个查询头都有自己的 K、V 头",
    "Mixed Precision": "用低精度（如 bf16）做矩阵乘法，用高精度（fp32）保存参数的主副本和累加",
    "MQA": "多查询注意力（Multi-Query Attention）：所有查询头共用一组 K、V 头",
    "Multicast": "一次发送、多个接收者同时收到的通信方式",
    "Named Scope": "给一段 JAX 代码起的名字，会出现在 HLO 和 profile 里，便于对照",
    "NVSwitch": "NVIDIA 的交换芯片，把一个节点内的 GPU 全连接起来",
    "Occupancy": "一个 SM 上实际驻留的线程束数占上限的比例",
    "Pipeline Stage": "流水线并行中负责连续若干层的那一组设备",
    "profile": "一次运行的性能记录：每个操作在什么时间、在哪个设备上执行了多久",
    "Ragged AllToAll": "各设备发给各设备的数据量不相等的 AllToAll，MoE 路由会用到",
    "ReduceScatter": "集合通信：先逐元素求和，再把结果切块，每个设备只留自己那一块；AllGather 的转置",
    "Register File": "处理器核心里最快的一级存储，每个线程的操作数放在这里",
    "Replica Groups": "HLO 集合通信里指明哪些设备一起参与的分组",
    "Reshard": "把数组从一种分片方式改成另一种，通常要一次集合通信",
    "RoPE": "旋转位置编码（Rotary Position Embedding）：按位置旋转 Q、K 向量来表示相对位置",
    "Scale-up / Scale-out Network": "纵向扩展网络连接一个节点或 NVLink 域内的 GPU，带宽高；横向扩展网络连接节点之间，带宽低",
    "Sharding Propagation": "编译器根据已知的输入、输出分片，推出程序中间每个数组该怎么分片",
    "SM Subpartition": "GPU 的一个 SM 分成的四个子单元，各有自己的线程束调度器和寄存器",
    "SparseCore": "TPU 上专门处理嵌入查找这类稀疏访问的小核心",
    "Structured Sparsity": "按固定模式（如每 4 个里有 2 个零）稀疏的矩阵，硬件能借此加速",
    "Target Model": "投机解码里负责验证草稿、决定最终输出的大模型",
    "Throughput": "单位时间处理的 token（或请求）数",
    "TMEM": "Blackwell GPU 上张量核心专用的片上存储（Tensor Memory）",
    "trace": "JAX 运行一遍 Python 函数、记录它做了哪些操作的过程（也指 profile 里的时间线）",
    "Utilization": "实际达到的速率占峰值的比例",
    "varying / invariant": "shard_map 里值的两种类型：各设备可能不同（varying），或保证各设备相同（invariant）",
    "VREG": "TPU 向量单元的向量寄存器，一个是 8×128 个 32 位数",
    "Zero-bubble Pipeline": "把反向传播拆成两半重新排程、几乎消除流水线空闲（气泡）的调度方法",
    "Affinity Routing": "把同一会话的请求发到同一台服务器，以便复用那里已有的前缀缓存",
    "Alchemy (of training)": "对大模型训练“全凭经验和运气”的调侃说法，本书想说明它其实能算",
    "ALU": "算术逻辑单元：每个周期做一次加法或乘法这类运算的硬件",
    "Attention": "Transformer 中让每个 token 按相关程度汇总其他 token 信息的那一层",
    "Bandwidth": "单位时间能搬运的字节数，单位 B/s",
    "Bandwidth-bound": "耗时由搬数据（HBM 或链路）决定，而不是由计算决定",
    "Batch": "一次一起处理的一组样本（本书按 token 计数）",
    "Bottleneck": "几个限制里最慢、决定总耗时的那一个",
    "Chip": "一颗加速器芯片（一颗 TPU 或一块 GPU）",
    "Chip-hour": "一颗芯片用一小时，按它计价和比较成本",
    "Co-design": "为了同一个目标一起设计硬件、软件和模型",
    "Collective Communication": "多个设备一起参与的通信操作，如 AllGather、AllReduce",
    "Communication": "设备之间搬运数据（本书主要指集合通信）",
    "Communication-bound": "耗时由设备之间的通信决定",
    "Compute-bound": "耗时由计算决定：算力已经用满，搬数据的时间藏在计算后面",
    "Continuous Batching": "解码时不等整批结束，哪条序列结束就立刻换进新的请求",
    "Cost per Token": "生成（或处理）一个 token 分摊到的硬件费用",
    "Critical Path": "决定总耗时的那一串先后依赖的操作",
    "Cross-layer KV Sharing": "相邻几层共用同一份 KV 缓存，缓存随之变小",
    "CUDA Core": "GPU 上做标量浮点运算的单元，张量核心之外的计算都在这里",
    "Decode": "推理的第二阶段：每步生成一个新 token，要读一遍全部权重和 KV 缓存",
    "Disaggregated Serving": "预填充和解码放在不同的芯片组上，各自选批次和并行方式",
    "DMA": "直接内存访问：不经过计算单元、由专门引擎在内存之间搬数据",
    "Edge Inference": "在手机、个人电脑这类终端设备上跑推理",
    "einsum": "用下标字母写张量乘法的记号，如 `bd,df->bf` 表示矩阵乘法",
    "Exercise": "本书每章后面带自动检查的练习题",
    "Fat Tree": "一种多层交换网络，越靠上层链路越多，使任意两点之间带宽差不多",
    "FMA (Fused Multiply-Add)": "一条指令完成 a×b+c，按惯例算作 2 次浮点运算",
    "FSDP": "全分片数据并行：像数据并行一样切批次，同时把参数和优化器状态也切开，用到时再收集",
    "Full-duplex": "链路两个方向可以同时全速收发",
    "Further Reading": "每章末尾和第11章推荐的原始资料",
    "Gradient Accumulation": "把一个大批次分成几个小批次依次算，把梯度累加后再更新，以省内存",
    "Greedy Decoding": "每步都取概率最大的那个 token",
    "HBM": "高带宽内存：和芯片封装在一起的大容量主存，存参数、激活和 KV 缓存",
    "HLO": "XLA 的中间表示（High Level Operations），JAX 程序编译时先变成它",
    "Hop": "数据从一颗芯片经一条链路到相邻芯片，算一跳",
    "Host Offload": "把暂时不用的数据（如激活、优化器状态）放到主机内存里",
    "ICI": "芯片间互连（Inter-Chip Interconnect）：同一个 TPU 切片里芯片之间的直连链路",
    "In-network Reduction (SHARP)": "交换机在转发数据时顺便把它们加起来，少传一半数据",
    "Inference": "用训练好的模型生成输出，分预填充和解码两个阶段",
    "Interleaved Serving": "预填充和解码在同一组芯片上交替进行",
    "JAX": "Google 的 Python 数值计算库，用 XLA 编译，原生支持 TPU 和多设备并行",
    "kernel": "在加速器上执行的一段底层程序（一个编译好的计算内核）",
    "KV Cache": "解码时保存下来的每层、每个已见 token 的 K、V 向量，避免重复计算",
    "L1 / L2 Cache": "GPU 的片上缓存：L1 属于每个 SM，L2 全芯片共享",
    "lane / sublane": "TPU 向量单元的两个方向：8 个 sublane × 128 个 lane",
    "Latency": "从请求到结果所花的时间（推理里常指每步或首 token 的时间）",
    "Layout": "多维数组在内存里按什么顺序、怎样分块存放",
    "Leaf / Spine / Core Switch": "胖树网络的三层交换机，从连接节点的叶交换机往上到核心交换机",
    "Link": "两颗芯片（或芯片与交换机）之间的一条物理连接",
    "LLM": "大语言模型：用海量文本训练的 Transformer 语言模型",
    "Local Attention": "每个 token 只看前面固定长度窗口内的 token 的注意力",
    "Memory": "存数据的地方，本书主要指 HBM，也包括主机内存",
    "Memory Capacity": "能存下多少字节（本书多指 HBM 容量）",
    "Memory-bandwidth-bound": "耗时由从 HBM 读写数据的速度决定",
    "MFU": "模型 FLOPs 利用率：模型实际需要的 FLOPs 除以（峰值算力 × 耗时）",
    "Mixture of Experts": "混合专家：每层有多个前馈网络（专家），每个 token 只经过其中几个",
    "Model Replica": "数据并行中的一份完整模型",
    "Multi-slice": "用 DCN 把多个 TPU 切片连起来一起训练",
    "MXU": "TPU 的矩阵乘法单元，一个脉动阵列",
    "NCCL": "NVIDIA 的集合通信库，为 GPU 实现 AllReduce 等操作",
    "Nearest Neighbor": "只和网格中相邻的芯片直接相连",
    "NIC": "网卡：节点接入横向扩展网络的接口",
    "Node (GPU)": "一台 GPU 服务器，通常 8 块 GPU，内部用 NVLink 相连",
    "Normalization": "把向量缩放到固定尺度的层，如 LayerNorm、RMSNorm",
    "NVLink": "NVIDIA 的 GPU 之间的高速直连链路",
    "NVLink Domain": "用 NVLink（经 NVSwitch）全连接在一起的一组 GPU",
    "OCS (Optical Circuit Switch)": "光路交换机：用可转动的镜子重新连接光纤，把 TPU 立方体拼成 Pod",
    "Offline Batch Inference": "不要求实时返回、只在乎总成本的成批推理（评测、生成数据）",
    "OOM (Out of Memory)": "内存不够，程序分配失败",
    "Op (Operator)": "计算图里的一个操作节点",
    "Orchestrator": "推理引擎里负责排队、调度请求和流式返回结果的组件",
    "Outer Product": "列向量乘行向量得到的矩阵；矩阵乘法可以写成外积之和",
    "Overlap": "通信和计算同时进行，总耗时接近两者中较长的那个",
    "Oversubscription": "下层链路总带宽与上层链路总带宽之比（收敛比）；大于 1 时跨层流量会排队",
    "Pallas": "JAX 里写自定义 TPU/GPU 内核的扩展",
    "Parallelism Strategy": "把模型和数据分到多颗芯片上的方法：数据并行、张量并行、流水线并行、专家并行",
    "Pareto Frontier": "延迟和每 token 成本之间的最优边界：边界上的点不可能两者同时更好",
    "PCIe": "主机 CPU 和加速器之间的总线",
    "Peak FLOPs/s": "芯片每秒最多能做的浮点运算数（厂商标称值），记作 C",
    "Per-token Latency": "解码时生成每个 token 所花的时间",
    "Perf per Dollar": "每花一美元能得到的性能（性价比）",
    "Pipeline Bubble": "流水线开头和结尾部分设备空闲等待的时间",
    "Pipelining": "芯片内一边搬下一块数据一边算当前这一块",
    "Pod": "一组用 ICI 直接连起来的 TPU 芯片，是最大的 ICI 连通单元",
    "Prefetch": "提前把接下来要用的数据搬到更快的内存里",
    "Prefill": "推理的第一阶段：一次处理整个提示词，写满它的 KV 缓存",
    "Prefix Caching": "缓存常见前缀（如系统提示）的 KV，后来的请求直接复用",
    "Profiler": "记录程序运行时每个操作耗时的工具",
    "QPS": "每秒处理的请求数",
    "Quantization": "用更少的位数（如 int8、int4）存权重或激活，以省内存和带宽",
    "Reduce (Reduction)": "把多个数合成一个（通常是求和）的运算",
    "Rematerialization": "反向传播时重新计算部分激活，而不是前向时全部存下来，用计算换内存",
    "Replicated (Fully / Partially)": "同一份数据在所有（或部分）设备上各存一份",
    "Ring": "设备首尾相连成环的拓扑，也指沿环传数据的集合通信算法",
    "Ring Attention": "序列切分到多个设备上，K、V 沿环传递，边传边算注意力",
    "Roofline Analysis": "用算力和带宽两个上限估算一个操作最快要多久的方法",
    "Roofline Model": "把可达算力画成算术强度的函数：斜线是带宽限制，平顶是算力限制",
    "Sampling": "按模型给出的概率分布挑选下一个 token",
    "Scalable Unit (SU)": "NVIDIA 集群的基本搭建单元：一组节点加一层叶交换机",
    "Scalar Core": "TPU 核心里负责取指令、发起 DMA、控制循环的标量处理器",
    "Scaling (a Model)": "让模型在更多芯片上训练和推理，同时保持效率",
    "Scaling Law": "模型效果随参数量、数据量和算力增长的经验规律",
    "Serving": "把模型部署成对外提供推理的服务",
    "shard_map": "JAX 的手动分片 API：函数在每个设备上看到本地那一块，通信要自己写",
    "SIMD / SIMT": "一条指令同时处理多个数据（SIMD）；GPU 上多个线程同步执行同一指令（SIMT）",
    "Slice (TPU)": "分配给一个任务的一组相连的 TPU 芯片，如 `4x4`",
    "SM": "流式多处理器：GPU 的基本计算单元，内含张量核心、CUDA 核心和共享内存",
    "Speculative Decoding": "用小模型先猜几个 token，大模型一次验证，猜对的部分直接接受",
    "StableHLO": "JAX 交给 XLA 的可移植中间表示",
    "Strong Scaling": "问题规模不变，芯片数加倍时耗时减半",
    "Systolic Array": "数据在一格格乘加单元之间有节奏地流动的阵列，用来做矩阵乘法",
    "Tensor Parallel": "张量并行：把每层的权重矩阵切到多颗芯片上，层内要通信",
    "Tiling": "把大矩阵切成能放进快速内存的小块逐块计算",
    "Topology": "芯片之间怎么连：环、二维或三维环面、胖树等",
    "Torus": "环面：网格每一行、每一列的首尾也连起来",
    "Transformer": "由注意力层和前馈层堆叠而成的神经网络，大语言模型都用它",
    "Tree / Ring Algorithm": "集合通信的两类算法：沿树形逐层汇总，或沿环逐段传递",
    "Trie": "前缀树：共享前缀的字符串存在同一条路径上，用来组织前缀缓存",
    "TTFT": "首 token 延迟：从请求到达到输出第一个 token 的时间",
    "Twisted Torus": "环绕链路错开几格再接回的环面，缩短最远两点之间的距离",
    "Unidirectional Bandwidth": "一个方向的带宽（双向带宽是两个方向之和）",
    "VMEM": "TPU 核心里的向量内存：比 HBM 小得多、快得多的片上存储",
    "VPU": "TPU 的向量处理单元：做逐元素运算、激活函数和归约",
    "Weight-stationary": "权重留在各芯片上不动、让激活流过的分片方式",
    "Worked Example": "正文里一步步算完的例题",
    "Wraparound Link": "把网格一行（或一列）首尾接起来的链路",
    "XLA": "把 JAX 程序编译成 TPU/GPU 机器码的编译器",
    "XLU": "TPU 的跨 lane 单元：做转置、跨 lane 归约和置换",
    "ZeRO": "把优化器状态、梯度乃至参数切分到数据并行的各个设备上的方法",
    "Black Magic": "对性能调优“说不清道理”的调侃说法",
    "Data Parallel": "数据并行：每颗芯片存一份完整模型，各处理批次的一部分，每步对梯度做 AllReduce",
    "Device": "JAX 看到的一个计算设备（`jax.devices()` 里的一项）",
    "DGX SuperPOD": "NVIDIA 由多个 DGX 节点组成的参考集群设计",
    "dtype": "数组元素的数据类型，如 bf16、fp32、int8",
    "Expert Parallel": "专家并行：MoE 的不同专家放在不同芯片上，token 用 AllToAll 发过去",
    "FFN (Feed-Forward Network)": "前馈网络：Transformer 每层里注意力之后的那两三个大矩阵乘法",
    "FlashAttention": "分块计算注意力、不把整个注意力矩阵写回 HBM 的算法",
    "Global Batch Size": "一个训练步里所有芯片合起来处理的 token 数",
    "InfiniBand": "高性能计算集群常用的网络，用于 GPU 节点之间",
    "jit": "JAX 的即时编译：第一次调用时把函数追踪并编译成 XLA 程序",
    "Matrix Multiplication (matmul)": "矩阵乘法 C = AB，FLOPs 为 2×M×K×N",
    "Megacore": "把一颗芯片上的两个 TensorCore 当作一个设备使用（v4、v5p）",
    "Mesh Axis": "设备网格的一个维度，用名字（如 X、Y、Z）来指",
    "Microbatch": "流水线并行中把一个批次再切成的小份",
    "Model Parallel": "把模型本身切到多颗芯片上的并行方式的总称",
    "Online Softmax": "分块计算 softmax：边读边维护最大值和归一化因子，不必先看完整行",
    "PagedAttention": "把 KV 缓存按固定大小的页管理的注意力实现（vLLM）",
    "Pipeline Parallel": "流水线并行：把层分成几段放到不同芯片上，激活在段之间传递",
    "Ragged Matmul": "一组大小不等的矩阵乘法一起做（MoE 的各专家）",
    "TensorCore (TPU)": "TPU 的一个完整核心（含 MXU、VPU、VMEM）",
    "token": "文本切分后的最小单位，模型每次处理、生成一个",
    "Upper Bound": "耗时上界：通信与计算完全不重叠时",
    "Accelerator": "为矩阵运算专门设计的芯片，如 TPU、GPU",
    "Batch Size": "一个批次里的 token 数（本书一律按 token 计，不是序列数）",
    "Attainable FLOPs/s": "一个操作在某颗芯片上实际能达到的算力，Roofline 图的纵轴",
    "benchmark": "评测模型能力或测量速度的标准测试",
    "Explicit / Auto / Manual Sharding Mode": "JAX 网格轴的三种分片模式：分片写进类型并由规则推出、交给编译器决定、在 shard_map 里手写",
    "Device Mesh": "把设备排成的多维网格，每一维有个名字（代码里是 `Mesh`）",
    "FLOPs/s": "每秒浮点运算数，衡量算力的速率单位",
    "Dense / Sparse FLOPs": "不依赖稀疏性的峰值（稠密）和借结构化稀疏标出的翻倍峰值（稀疏）；本书一律用稠密数字",
}


def definition(note: str) -> str:
    """The part of a glossary note that says what the term means (website-review M11): clauses
    that are style rules for writers (不用…、首注…、保留英文…) go to the contributor guide."""
    keep = [c.strip() for c in re.split(r"[；。]", clean(note)) if c.strip() and not _RULE.search(c)]
    return "；".join(keep)


def context(term_zh: str, label: str | None, n: int | None, sources) -> str:
    """The sentence where the book introduces the term, as a fallback definition."""
    if n is None:
        return ""
    probe = re.split(r"\s*[/／（(]\s*", term_zh)[0].strip()
    text = re.sub(r"```\{code-cell\}.*?\n```", "", sources[n].read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"^:::.*$|^\|.*$", "", text, flags=re.M)  # directive fences and table rows
    body = text[text.find(f"({label})="):] if label and f"({label})=" in text else text
    for needle in (probe + "（", probe):
        pos = body.find(needle)
        if pos < 0:
            continue
        start = max(body.rfind(c, 0, pos) for c in "。！？\n") + 1
        ends = [e for e in (body.find(c, pos) for c in "。！？\n") if e >= 0]
        s = body[start:min(ends) if ends else len(body)].strip()
        s = re.sub(r"\{glue:?\w*\}`[^`]*`", "…", s)
        s = re.sub(r"\{(ref|doc|eq|cite|numref)\}`([^`<]*)(<[^>]*>)?`", r"\2", s)
        s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
        s = s.replace("**", "").strip("-*# ")
        if 8 <= len(s) <= 160 and "$" not in s and "`" not in s:
            return s + "。"
    return ""


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--glossary", default=str(ROOT.parent / "shared" / "spec" / "GLOSSARY.md"))
    a = ap.parse_args(argv)
    src = chapter_sources()
    out = ["(sec-appendix-glossary)=", "# 术语表", "",
           "全书每个概念只用一种写法。下表按英文排序；“章”一栏链接到书里第一次认真讲这个词的那一节，"
           "“说明”是这个词在本书里的意思（取自术语第一次出现的那句话时，加了引号）。"
           "保留英文的词（AllGather、FLOPs、MFU……）在中文一栏也写英文。", "",
           "| English | 中文 | 章 | 说明 |", "|---|---|---|---|"]
    n_linked = 0
    for en, zh, chap, note in rows(Path(a.glossary)):
        label, n = where(zh, chap, src)
        if label:
            link = f"{{ref}}`§{n} <{label}>`"
            n_linked += 1
        else:
            link = f"§{chap}" if chap.isdigit() else "—"
        note = DEFINITIONS.get(en) or definition(note)
        if not note:
            sentence = context(zh, label, n, src)
            note = f"“{sentence}”" if sentence else ""
        note = note.replace("|", "\\|")
        out.append(f"| {en} | {zh} | {link} | {note} |")
    (ROOT / "appendix" / "glossary.md").write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"wrote appendix/glossary.md: {len(out) - 8} terms, {n_linked} linked to a section")


if __name__ == "__main__":
    main()
