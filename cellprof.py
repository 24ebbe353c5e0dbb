import sys, os, time
sys.path.insert(0, "tools")
import nbtool, nbformat
from nbclient import NotebookClient
p = sys.argv[1]
os.environ.update(nbtool._env())
nb = nbformat.read(p, as_version=4)
client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": os.path.dirname(p)}})
st = {"s": 0.0, "t": time.time(), "rows": []}
def hook(cell_index=None, cell=None, **_):
    now = nbtool._kernel_cpu_seconds(client)
    st["rows"].append((cell_index, now - st["s"], time.time() - st["t"], cell.source.splitlines()[:2]))
    st["s"] = now; st["t"] = time.time()
client.on_cell_executed = hook
client.execute()
for i, c, w, src in sorted(st["rows"], key=lambda r: -r[1])[:15]:
    print(f"#{i:3d} cpu {c:5.1f} wall {w:5.1f}  {src}")
print("total cpu", round(st["s"], 1))
