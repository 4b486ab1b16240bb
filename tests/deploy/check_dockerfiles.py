#!/usr/bin/env python3
"""Lint of perfcast's Dockerfiles without a Docker daemon.

  check_dockerfiles.py REPO_ROOT [--runtime-binaries perfcastd.Dockerfile BIN...]

For every deploy/docker/*.Dockerfile:
  - each FROM names a pinned image (a tag, not latest); COPY --from names an
    earlier stage;
  - each COPY from the build context names a path that exists in the repo and
    that .dockerignore does not leave out;
  - every `--target T` built is an add_executable(T) of the repo, and every
    /build/DIR/NAME installed is such an executable of DIR/CMakeLists.txt;
  - the final stage runs as a non-root USER and its exec-form ENTRYPOINT is a
    file the image installs.
For deploy/docker/perfcastd.Dockerfile, the shipped profiles that `perfcast
--local` fits on are in the build context and installed. For it (Debian 12, like this machine), apt
knows every package it installs, and the builder installs every -dev
package of deploy/install-deps.sh that the server and CLI need (all but
LibTorch, test and benchmark ones). With --runtime-binaries, each shared
library that the built BINs load directly (ELF NEEDED) belongs to a package
that the runtime stage installs, that apt pulls in with those, or that every
Debian system has (Priority: required).
Prints one line per problem; exit 1 if there is any.
"""
import fnmatch
import os
import re
import shlex
import subprocess
import sys

NOT_IN_SERVER_IMAGE = {"libtorch-dev", "libgloo-dev", "libgtest-dev", "libgmock-dev", "libbenchmark-dev"}
PROBLEMS = []


def fail(where, message):
    PROBLEMS.append(f"{where}: {message}")


def instructions(path):
    """(line number, INSTRUCTION, argument text) with continuations joined, comments dropped."""
    result, pending, start = [], "", 0
    with open(path) as f:
        for number, line in enumerate(f, 1):
            stripped = line.strip()
            if not pending and (not stripped or stripped.startswith("#")):
                continue
            if pending and stripped.startswith("#"):
                continue
            if not pending:
                start = number
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            text = pending + stripped
            pending = ""
            word, _, rest = text.partition(" ")
            result.append((start, word.upper(), rest.strip()))
    return result


def dockerignore(root):
    patterns = []
    path = os.path.join(root, ".dockerignore")
    if os.path.isfile(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    patterns.append(line)
    return patterns


def ignored(patterns, relpath):
    """Docker's rule: the last pattern matching the path or one of its parents wins."""
    parts = relpath.strip("/").split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    verdict = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        if any(fnmatch.fnmatchcase(p, pattern) for p in prefixes):
            verdict = not negate
    return verdict


def cmake_executables(root):
    """{directory relative to root: {executable names}} from add_executable() calls."""
    found = {}
    for directory, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        if "CMakeLists.txt" in files:
            with open(os.path.join(directory, "CMakeLists.txt")) as f:
                names = set(re.findall(r"add_executable\(\s*([A-Za-z0-9_.+-]+)", f.read()))
            if names:
                found[os.path.relpath(directory, root)] = names
    return found


def apt_packages(text):
    """Package names after `apt-get install` in a RUN argument (flags and shell words dropped)."""
    packages = []
    for match in re.finditer(r"apt-get install ([^&;|]*)", text):
        for word in match.group(1).split():
            if word.startswith("-") or "$" in word or word in ("if", "then", "fi"):
                continue
            packages.append(word)
    return packages


def check_dockerfile(root, path, executables, patterns):
    name = os.path.relpath(path, root)
    args, stages, final = {}, [], None
    installed = set()
    for number, word, rest in instructions(path):
        at = f"{name}:{number}"
        expand = lambda s: re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), s)
        if word == "ARG":
            key, _, value = rest.partition("=")
            args.setdefault(key, value)
        elif word == "FROM":
            words = rest.split()
            image = expand(words[0])
            if ":" not in image.split("/")[-1] or image.endswith(":latest") or "$" in image:
                fail(at, f"image {image!r} is not pinned to a tag")
            stage = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(stages))
            stages.append(stage)
            final = {"user": None, "entrypoint": None, "apt": [], "copies_out": False}
        elif word == "COPY":
            words = shlex.split(rest)
            flags = [w for w in words if w.startswith("--")]
            sources = [w for w in words if not w.startswith("--")][:-1]
            source_stage = next((f.split("=", 1)[1] for f in flags if f.startswith("--from=")), None)
            if source_stage is not None:
                if source_stage not in stages[:-1]:
                    fail(at, f"COPY --from={source_stage}: no earlier stage of that name")
                destination = [w for w in words if not w.startswith("--")][-1]
                final["copies_out"] |= any(source.startswith("/out") for source in sources)
                continue
            for source in sources:
                if source in (".", "./"):
                    continue
                if not os.path.exists(os.path.join(root, source)):
                    fail(at, f"COPY source {source!r} does not exist in the repository")
                elif ignored(patterns, source):
                    fail(at, f"COPY source {source!r} is left out by .dockerignore")
        elif word == "RUN":
            text = expand(rest)
            final["apt"] += apt_packages(text)
            for target_list in re.findall(r"--target\s+([^&;|]+)", text):
                for target in target_list.split():
                    if target.startswith("$"):
                        continue
                    if not any(target in names for names in executables.values()):
                        fail(at, f"builds target {target!r}, which no add_executable() defines")
            for targets in re.findall(r'targets="([^"]*)"', text):
                for target in targets.replace("$targets", "").split():
                    if not any(target in names for names in executables.values()):
                        fail(at, f"builds target {target!r}, which no add_executable() defines")
            for source, destination in re.findall(r"install [^&;]*?(\S+) (/out/\S+)", text):
                if source.startswith("/build/"):
                    directory, _, binary = source[len("/build/"):].rpartition("/")
                    if binary not in executables.get(directory, set()):
                        fail(at, f"installs {source}, but {directory}/CMakeLists.txt has no add_executable({binary})")
                elif not source.startswith("/"):
                    if not os.path.exists(os.path.join(root, source)):
                        fail(at, f"installs {source!r}, which does not exist in the repository")
                    elif ignored(patterns, source):
                        fail(at, f"installs {source!r}, which .dockerignore leaves out")
                installed.add(destination[len("/out"):])
        elif word == "USER":
            final["user"] = rest.split(":")[0]
        elif word == "ENTRYPOINT":
            final["entrypoint"] = rest
    if final is None:
        fail(name, "no FROM")
        return None
    if final["user"] in (None, "root", "0"):
        fail(name, "the final stage runs as root (add a USER)")
    entry = final["entrypoint"]
    if not entry or not entry.startswith("["):
        fail(name, "no exec-form ENTRYPOINT [...]")
    else:
        binary = shlex.split(entry.strip("[]").split(",")[0])[0]
        if binary not in installed or not final["copies_out"]:
            fail(name, f"ENTRYPOINT {binary} is not a file that the build stage installs into this stage")
    return final


def check_shipped_profiles(root, patterns, dockerfile):
    """The server image's build reads data/shipped-profiles.txt (CMake) and
    installs every file it lists where `perfcast --local` finds them."""
    where = "deploy/docker/perfcastd.Dockerfile"
    listed = ["shipped-profiles.txt"]
    with open(os.path.join(root, "data/shipped-profiles.txt")) as f:
        listed += [line.strip() for line in f if line.strip() and not line.startswith("#")]
    for name in listed:
        if ignored(patterns, "data/" + name):
            fail(where, f"data/{name} is left out by .dockerignore (add !data/{name})")
    with open(dockerfile) as f:
        if "/out/usr/local/share/perfcast/data/" not in f.read():
            fail(where, "the shipped profiles are not installed in /usr/local/share/perfcast/data")


def check_server_build_deps(root, builder_packages):
    with open(os.path.join(root, "deploy/install-deps.sh")) as f:
        text = f.read()
    text = re.sub(r"#.*", "", text)  # comments may hold parentheses and package-like words
    listed = set(re.findall(r"\b([a-z0-9][a-z0-9.+-]*-dev)\b", text.split("packages=(", 1)[-1].split(")", 1)[0]))
    for package in sorted(listed - NOT_IN_SERVER_IMAGE - set(builder_packages)):
        fail("deploy/docker/perfcastd.Dockerfile", f"builder lacks {package} (deploy/install-deps.sh has it)")


def library_packages(paths):
    """{library path: Debian package owning it}, from one dpkg -S call (it is slow per call)."""
    candidates = {}
    for path in paths:
        real = os.path.realpath(path)
        for candidate in (real, path, real.replace("/usr/lib/", "/lib/", 1)):
            candidates.setdefault(candidate, path)
    result = subprocess.run(["dpkg", "-S"] + sorted(candidates), capture_output=True, text=True)
    owners = {}
    for line in result.stdout.splitlines():
        package, _, owned = line.partition(": ")
        if owned in candidates:
            owners.setdefault(candidates[owned], package.split(":")[0].split(",")[0].strip())
    return owners


def check_debian_packages(packages):
    """Every package name is one that apt knows (skipped where apt has no package lists)."""
    result = subprocess.run(["apt-cache", "policy", "bash"] + sorted(set(packages)), capture_output=True, text=True)
    sections = {}
    for line in result.stdout.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            current = line[:-1].split(":")[0]
            sections[current] = ""
        elif "Candidate:" in line:
            sections[current] = line.split("Candidate:", 1)[1].strip()
    if sections.get("bash", "(none)") == "(none)":
        print("check_dockerfiles: apt has no package lists here; package names not checked")
        return
    for package in sorted(set(packages)):
        if sections.get(package, "(none)") == "(none)":
            fail("deploy/docker/perfcastd.Dockerfile", f"apt knows no package {package!r}")


def check_runtime_libraries(runtime_packages, binaries):
    listed = set(runtime_packages)
    closure = set(listed)
    result = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                             "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + sorted(listed),
                            capture_output=True, text=True)
    if result.returncode == 0:
        closure |= {line.split(":", 1)[0] for line in result.stdout.splitlines() if line and not line[0].isspace()}
    needed = []  # (binary, library, path)
    for binary in binaries:
        names = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                           subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout)
        paths = dict(re.findall(r"^\s*(\S+) => (/\S+)", subprocess.run(["ldd", binary], capture_output=True,
                                                                          text=True).stdout, re.M))
        needed += [(binary, name, paths[name]) for name in names if name in paths]  # not the loader
    owners = library_packages({path for _, _, path in needed})
    query = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Priority}\n"] + sorted(set(owners.values())),
                           capture_output=True, text=True).stdout
    required = {line.split()[0] for line in query.splitlines() if line.endswith(" required")}
    for binary, library, path in needed:
        package = owners.get(path)
        if package is None:
            fail(binary, f"{library} ({path}) belongs to no Debian package")
        elif package not in closure and package not in required:
            fail("deploy/docker/perfcastd.Dockerfile",
                 f"runtime stage lacks {package} ({library}, loaded by {os.path.basename(binary)})")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1])
    executables = cmake_executables(root)
    patterns = dockerignore(root)
    docker_dir = os.path.join(root, "deploy/docker")
    files = sorted(f for f in os.listdir(docker_dir) if f.endswith(".Dockerfile"))
    if not files:
        fail(docker_dir, "no *.Dockerfile")
    for name in files:
        stages = check_dockerfile(root, os.path.join(docker_dir, name), executables, patterns)
        if name == "perfcastd.Dockerfile" and stages is not None:
            froms = 0
            builder = []
            for _, word, rest in instructions(os.path.join(docker_dir, name)):
                froms += word == "FROM"
                if word == "RUN" and froms == 1:
                    builder += apt_packages(rest)
            check_server_build_deps(root, builder)
            check_shipped_profiles(root, patterns, os.path.join(docker_dir, name))
            check_debian_packages(builder + stages["apt"])
            if "--runtime-binaries" in argv:
                check_runtime_libraries(stages["apt"], argv[argv.index("--runtime-binaries") + 1:])
    for problem in PROBLEMS:
        print(problem)
    print(f"check_dockerfiles: {len(files)} Dockerfiles, {len(PROBLEMS)} problems")
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
