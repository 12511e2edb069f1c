"""The packed npm package, installed from its tarball into a scratch app: what it holds, that its runtime exports
are the ones its .d.ts declare, and that a strict TypeScript consumer of every public name type-checks."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

from tests.npm.conftest import HERE, node

CONSUMER = HERE / "consumer"


def test_tarball_holds_the_library_its_types_and_nothing_of_the_demo(tarball: Path) -> None:
    with tarfile.open(tarball) as tar:
        names = {n.removeprefix("package/") for n in tar.getnames()}
        pkg = json.loads(tar.extractfile("package/package.json").read())  # type: ignore[union-attr]
    for needed in ("framestream.js", "framestream.d.ts", "protocol.d.ts", "lib/client.js", "lib/decoder.js",
                   "node/index.js", "node/index.d.ts", "node/tokens.js", "node/agent.js", "react/index.js",
                   "react/index.d.ts", "package.json"):
        assert needed in names, needed
    assert not {n for n in names if n.startswith(("demo/", "node_modules/")) or n in ("app.js", "index.html",
                                                                                       "app.css")}
    assert "dependencies" not in pkg and set(pkg["peerDependencies"]) == {"react"}
    assert set(pkg["exports"]) == {".", "./node", "./react", "./package.json"}


def test_runtime_exports_are_the_declared_ones(scratch: Path) -> None:
    shutil.copy(CONSUMER / "exports.mjs", scratch)
    result = json.loads(node("exports.mjs", cwd=scratch).stdout)
    assert set(result) == {"framestream", "framestream/node", "framestream/react"}
    for entry, names in result.items():
        assert names["missingTypes"] == [] and names["missingValues"] == [], (entry, names)
    assert {"connect", "FramestreamClient", "mountFrame", "attachInput", "mountTabUi"} <= set(
        result["framestream"]["names"])
    assert {"sandboxKey", "mintToken", "AgentClient", "TakenOver"} <= set(result["framestream/node"]["names"])
    assert result["framestream/react"]["names"] == ["Frame", "useFramestreamClient"]


def test_strict_typescript_consumer_of_every_public_name(scratch: Path) -> None:
    for name in ("consumer.tsx", "tsconfig.json"):
        shutil.copy(CONSUMER / name, scratch)
    tsc = str(scratch / "node_modules" / "typescript" / "bin" / "tsc")
    # As a Vite app resolves it, then as Node's own ESM resolution does (exports, types conditions).
    node(tsc, "-p", "tsconfig.json", cwd=scratch)
    node(tsc, "-p", "tsconfig.json", "--module", "nodenext", "--moduleResolution", "nodenext", cwd=scratch)
    # The checks are real: a consumer that misuses a type fails.
    bad = scratch / "bad.ts"
    bad.write_text("import { mintToken, sandboxKey } from 'framestream/node';\n"
                   "mintToken(sandboxKey('s'), { role: 'drive', step: 'yes' });\n")
    proc = node(tsc, "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext",
                "--target", "es2022", str(bad), cwd=scratch, check=False)
    assert proc.returncode != 0 and "bad.ts(2," in proc.stdout and "TS2322" in proc.stdout, proc.stdout
