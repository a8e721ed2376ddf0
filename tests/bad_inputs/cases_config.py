"""cases_config.py — configs that cannot be used: one line naming the key and the file, exit 2.
Counts that size work or memory are bounded (docs/config.md, "Limits"); anything that is
not a regular file is refused before it is read. A NUL inside a string (a double-quoted
"base.h5\\0") is refused: the path read would be cut short (issue 24)."""
import os

from aps_fixtures import smooth_map, upper, write_aps_u
from corpus import expect_nothing_written

HEAD = "analysis_mode: static\n"


def data_file(d):
    path = os.path.join(d, "data.h5")
    write_aps_u(path, [upper(smooth_map(30, s)) for s in range(2)], [0.01], [0.0, 45.0],
                [1, 2], frame_time=0.1)
    return path


def text_config(body, command="validate", extra=(), data=False):
    """A config of HEAD + body (bytes or str) run with `command`."""
    def make(d):
        path = os.path.join(d, "cfg.yaml")
        text = HEAD.encode() + (body if isinstance(body, bytes) else body.encode())
        if data:
            text += ("experimental_data: {file_path: %s}\n" % data_file(d)).encode()
        with open(path, "wb") as f:
            f.write(text)
        args = [command, "--config", path] + list(extra)
        if command == "nlsq":
            args += ["--out", d + "/out", "--no-plots"]
        return args
    return make


def rings_angle_starts(command, *extra):
    # ring 0.01 keeps 2 angles, ring 0.02 one (bins 1, 2, 3): a list of 2 contrast starts
    # fits one ring only; refused before anything is fitted or written
    def make(d):
        data = os.path.join(d, "rings.h5")
        write_aps_u(data, [upper(smooth_map(30, s)) for s in range(3)], [0.01, 0.02],
                    [0.0, 45.0], [1, 2, 3], frame_time=0.1)
        path = os.path.join(d, "cfg.yaml")
        with open(path, "w") as f:
            f.write(HEAD + "experimental_data: {file_path: %s}\n" % data
                    + "analyzer_parameters: {scattering: {wavevector_q: all}}\n"
                    + "initial_parameters: {per_angle_scaling: {contrast: [0.1, 0.2]}}\n")
        args = [command, "--config", path] + list(extra)
        if command == "nlsq":
            args += ["--out", d + "/out", "--no-plots"]
        return args
    return make


def special(kind):
    def make(d):
        path = os.path.join(d, "cfg.yaml")
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            os.mkdir(path)
        elif kind == "dangling":
            os.symlink(os.path.join(d, "gone.yaml"), path)
        return ["validate", "--config", path]
    return make


def huge_config(d):
    """A 65 MiB config (a sparse file: nothing is written but its size)."""
    path = os.path.join(d, "cfg.yaml")
    with open(path, "wb") as f:
        f.write(HEAD.encode())
        f.truncate(65 << 20)
    return ["validate", "--config", path]


def alias_bomb():
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for k in range(1, 9):
        prev = "*a%d" % (k - 1)
        lines.append("a%d: &a%d [%s]" % (k, k, ", ".join([prev] * 10)))
    return "x_bomb:\n" + "".join("  %s\n" % l for l in lines)


def base36(k):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        k, r = divmod(k, 36)
        out = digits[r] + out
        if k == 0:
            return out


def many_anchors(n):
    """n distinct anchors, each aliased once, in one flow list: 2n nodes. The loader used
    to look each alias up in a list (100 000 anchors: up to 81 s); now hashed."""
    return "x_anchors: [" + ",".join("&%s 1,*%s" % (base36(k), base36(k))
                                     for k in range(n)) + "]\n"


def indented_then_more(d):
    """Keys indented under nothing, then a key at column 0: libyaml ends the document at
    the first and the rest is not a document (it used to be dropped unread)."""
    path = os.path.join(d, "cfg.yaml")
    with open(path, "w") as f:
        f.write("  analysis_mode: static\nanalysis_mode: laminar_flow\n")
    return ["validate", "--config", path]


def merge_bounds(body):
    """A bounds entry for D0 whose min and max come from a merge key."""
    return ("x_defaults: &d0 %s\nparameter_space:\n  bounds:\n"
            "    - name: D0\n      <<: *d0\n" % body)


def deep():
    return "x_deep: " + "[" * 200 + "]" * 200 + "\n"


def many_keys_repeat():
    body = "x_many:\n" + "".join("  k%d: %d\n" % (k, k) for k in range(100000))
    return body + "  k7: again\n"


C = "Configs"
CASES = [
    {"name": "config_missing", "klass": C,
     "make": lambda d: ["validate", "--config", d + "/nope.yaml"],
     "rc": 2, "needles": ["nope.yaml"],
     "fix": "Check the path given to --config.",
     "check": expect_nothing_written()},
    {"name": "config_dangling_link", "klass": C, "make": special("dangling"),
     "rc": 2, "needles": ["cannot open config file", "cfg.yaml"],
     "fix": "The symbolic link points nowhere: point it at the config, or name the file."},
    {"name": "config_fifo", "klass": C, "make": special("fifo"), "timeout": 20,
     "rc": 2, "needles": ["config file is not a regular file (a FIFO)", "cfg.yaml"],
     "fix": "Write the config to a regular file; pipes are refused unread (they would block)."},
    {"name": "config_folder", "klass": C, "make": special("folder"),
     "rc": 2, "needles": ["config file is not a regular file (a folder)", "cfg.yaml"],
     "fix": "Name the YAML file itself, not its folder."},
    {"name": "config_too_big", "klass": C, "make": huge_config,
     "rc": 2, "needles": ["config file is 68157440 bytes, above the limit of 64 MiB"],
     "fix": "A config is a few KB: name the YAML config, not a data or log file."},
    {"name": "config_invalid_yaml", "klass": C,
     "make": text_config("analyzer_parameters:\n  dt: [1, 2\n  start_frame: 3\n"),
     "rc": 2, "needles": ["invalid YAML", "cfg.yaml:"],
     "fix": "Fix the YAML syntax at the line and column named (an unclosed bracket here)."},
    {"name": "config_invalid_utf8", "klass": C,
     "make": text_config(b"analyzer_parameters: {dt: \"\xff\xfe\"}\n"),
     "rc": 2, "needles": ["invalid YAML", "cfg.yaml"],
     "fix": "Save the config as UTF-8 text."},
    {"name": "config_type_error", "klass": C,
     "make": text_config("analyzer_parameters: {dt: fast}\n"),
     "rc": 2, "needles": ["analyzer_parameters.dt: 'fast' is not allowed", "cfg.yaml:2"],
     "fix": "Give dt as a number of seconds."},
    {"name": "config_range_error", "klass": C,
     "make": text_config("analyzer_parameters: {dt: -0.1}\n"),
     "rc": 2, "needles": ["analyzer_parameters.dt: '-0.1' is not allowed", "cfg.yaml:2"],
     "fix": "dt is the time between frames, in seconds, above 0."},
    {"name": "config_rings_mode", "klass": C,
     "make": text_config("optimization: {rings: both}\n"),
     "rc": 2, "needles": ["optimization.rings: 'both' is not allowed", "per_ring, joint",
                          "cfg.yaml:2"],
     "fix": "optimization.rings is per_ring (each ring fitted alone) or joint (one fit "
            "over the rings, docs/user-guide.md \"Several q rings\")."},
    {"name": "config_dt_huge", "klass": C,
     "make": text_config("analyzer_parameters: {dt: 1e308}\n", data=True),
     "rc": 2, "needles": ["analyzer_parameters.dt: '1e308' is not allowed",
                          "from 1e-12 to 86400", "cfg.yaml:2"],
     "fix": "dt is the time between frames in seconds, from 1e-12 to 86400."},
    {"name": "config_output_surfaces", "klass": C,
     "make": text_config("output: {surfaces: some}\n"),
     "rc": 2, "needles": ["output.surfaces: 'some' is not allowed", "none, full", "cfg.yaml:2"],
     "fix": "output.surfaces is none (the default: results.h5 without the maps) or full."},
    {"name": "config_angle_pages", "klass": C,
     "make": text_config("plotting: {angle_pages: 5}\n"),
     "rc": 2, "needles": ["plotting.angle_pages: '5' is not allowed", "auto, all", "cfg.yaml:2"],
     "fix": "plotting.angle_pages is auto (the overview's angles, at most 10 pages) or all."},
    {"name": "config_q_zero", "klass": C,
     "make": text_config("analyzer_parameters: {scattering: {wavevector_q: 0}}\n"),
     "rc": 2, "needles": ["wavevector_q: '0' is not allowed"],
     "fix": "wavevector_q is the q of the ring to fit, in Å⁻¹, above 0."},
    {"name": "config_q_range_reversed", "klass": C,
     "make": text_config("analyzer_parameters: {scattering: {wavevector_q: "
                         "{min: 0.006, max: 0.003}}}\n"),
     "rc": 2, "needles": ["wavevector_q: min 0.006 is above max 0.003", "cfg.yaml:2"],
     "fix": "A q range is {min: Q1, max: Q2} with Q1 <= Q2, in Å⁻¹."},
    {"name": "config_q_range_half", "klass": C,
     "make": text_config("analyzer_parameters: {scattering: {wavevector_q: {min: 0.003}}}\n"),
     "rc": 2, "needles": ["wavevector_q.max: missing", "cfg.yaml:2"],
     "fix": "A q range needs both min and max (all rings above a q: give max a large value)."},
    {"name": "config_q_list_item", "klass": C,
     "make": text_config("analyzer_parameters: {scattering: {wavevector_q: [0.003, -1]}}\n"),
     "rc": 2, "needles": ["wavevector_q[1]: '-1' is not allowed", "a number > 0"],
     "fix": "Every value of a wavevector_q list is a ring's q in Å⁻¹, above 0."},
    {"name": "config_q_word", "klass": C,
     "make": text_config("analyzer_parameters: {scattering: {wavevector_q: every}}\n"),
     "rc": 2, "needles": ["wavevector_q: 'every' is not allowed", "all, a list"],
     "fix": "wavevector_q is a number, all, a list of numbers or {min: Q1, max: Q2}."},
    {"name": "config_end_frame_zero", "klass": C,
     "make": text_config("analyzer_parameters: {end_frame: 0}\n"),
     "rc": 2, "needles": ["analyzer_parameters.end_frame"],
     "fix": "end_frame is 1-based and inclusive; -1 means the last stored frame."},
    {"name": "config_alias_bomb", "klass": C, "make": text_config(alias_bomb()),
     "rc": 2, "needles": ["YAML aliases expand to more than", "cfg.yaml"],
     "fix": "Write the config without nested aliases (a 'billion laughs' file is refused)."},
    {"name": "config_nodes_cap", "klass": C,
     "make": text_config("x_list: [" + ",".join(["1"] * 1000001) + "]\n"),
     "rc": 2, "timeout": 20, "needles": ["YAML has more than 1000000 nodes", "cfg.yaml:2"],
     "fix": "A config has a few hundred values; 10^6 nodes is the loader's cap "
            "(docs/config.md, Limits)."},
    {"name": "config_many_anchors_cap", "klass": C, "make": text_config(many_anchors(500001)),
     "rc": 2, "timeout": 20,
     "needles": ["YAML aliases expand to more than 1000000 nodes", "cfg.yaml:2"],
     "fix": "Write fewer anchors and aliases; the loader stops at 10^6 nodes after "
            "expansion (it loads such files in about a second)."},
    {"name": "config_alias_undefined", "klass": C, "make": text_config("x_a: *nowhere\n"),
     "rc": 2, "needles": ["alias '*nowhere' has no anchor '&nowhere' written before it",
                          "cfg.yaml:2"],
     "fix": "Write the anchor (&name) before the alias (*name) that uses it."},
    {"name": "config_alias_recursive", "klass": C, "make": text_config("x_a: &r [1, *r]\n"),
     "rc": 2, "needles": ["alias '*r' lies inside the node it names", "cfg.yaml:2"],
     "fix": "An alias cannot repeat the list or map that holds it."},
    {"name": "config_anchor_twice", "klass": C,
     "make": text_config("x_a: &d 1\nx_b: &d 2\nx_c: *d\n"),
     "rc": 2, "needles": ["duplicated anchor '&d' (first written at line 2)", "cfg.yaml:3"],
     "fix": "Give each anchor its own name."},
    {"name": "config_two_documents", "klass": C,
     "make": text_config("---\nanalysis_mode: laminar_flow\n"),
     "rc": 2, "needles": ["a second YAML document starts at this line", "cfg.yaml:2"],
     "fix": "A config is one YAML document: remove the second '---' (or split the file). "
            "A lone '---' or '...' at the end is accepted."},
    {"name": "config_second_document_after_end", "klass": C,
     "make": text_config("...\n--- {analysis_mode: laminar_flow}\n"),
     "rc": 2, "needles": ["a second YAML document starts at this line", "cfg.yaml:3"],
     "fix": "Everything after '...' must be empty; move the settings into the first document."},
    {"name": "config_text_after_document", "klass": C, "make": indented_then_more,
     "rc": 2, "needles": ["invalid YAML: did not find expected <document start>",
                          "cfg.yaml:2:1"],
     "fix": "Indent every top-level key the same (at column 0); text after the first "
            "document is read, not dropped."},
    {"name": "config_merge_not_a_map", "klass": C,
     "make": text_config("parameter_space:\n  bounds:\n    - {name: D0, <<: 5}\n"),
     "rc": 2, "needles": ["the merge key '<<' takes a mapping or a list of mappings",
                          "cfg.yaml:4"],
     "fix": "Merge a mapping: '<<: *name' or '<<: [*a, *b]' with anchors on mappings."},
    {"name": "config_merge_bounds_min_only", "klass": C,
     "make": text_config(merge_bounds("{min: 2000000}")),
     "rc": 2, "needles": ["parameter_space.bounds[0]: min 2e+06 >= max 100000 for D0",
                          "cfg.yaml:5"],
     "fix": "Merged keys are read like written ones: the merged min is above the default "
            "max, so give max too (in the entry or in the merged map)."},
    {"name": "config_merge_bounds_bad_value", "klass": C,
     "make": text_config(merge_bounds("{min: 10, max: lots}")),
     "rc": 2, "needles": ["parameter_space.bounds[0].max: 'lots' is not allowed",
                          "cfg.yaml:2"],
     "fix": "A merged value is checked where it was written (the anchored map's line)."},
    # issue 33 item 11: max - min overflows to inf; NLSQ called D0 "at a bound" and CMC
    # failed with "log density not finite"
    {"name": "config_bounds_width_overflows", "klass": C,
     "make": text_config("parameter_space:\n  bounds:\n"
                         "    - {name: D0, min: -1.0e+308, max: 1.0e+308}\n"),
     "rc": 2, "needles": ["parameter_space.bounds[0]: max - min", "for D0 overflows",
                          "cfg.yaml:4"],
     "fix": "Give bounds whose width max - min is a finite number (below 1.8e308): the "
            "fits divide by it."},
    {"name": "config_deep_nesting", "klass": C, "make": text_config(deep()),
     "rc": 2, "needles": ["YAML nested deeper than 64 levels", "cfg.yaml"],
     "fix": "A config is a few levels deep; remove the nesting."},
    {"name": "config_duplicate_key", "klass": C,
     "make": text_config("parallel: {virtual_devices: 2}\nparallel: {}\n"),
     "rc": 2, "needles": ["duplicated key 'parallel' (first written at line 2)", "cfg.yaml:3"],
     "fix": "Keep one of the two sections (YAML keeps only the last, silently)."},
    {"name": "config_duplicate_among_100k", "klass": C, "make": text_config(many_keys_repeat()),
     "rc": 2, "timeout": 20,
     "needles": ["duplicated key 'k7' (first written at line 10)", "cfg.yaml:100003"],
     "fix": "Remove the repeated key; the check is a sort, so even 100 000 keys are fast."},
    {"name": "config_virtual_devices_huge", "klass": C,
     "make": text_config("parallel: {virtual_devices: 100000}\n"),
     "rc": 2, "needles": ["parallel.virtual_devices: '100000' is not allowed", "1 to 1024"],
     "fix": "virtual_devices is a thread count from 1 to 1024 (or auto)."},
    {"name": "config_n_starts_huge", "klass": C,
     "make": text_config("optimization: {nlsq: {multi_start: {enable: true, "
                         "n_starts: 5000000}}}\n", command="nlsq", data=True),
     "rc": 2, "needles": ["multi_start.n_starts: '5000000' is not allowed", "1 to 10000"],
     "fix": "n_starts is at most 10000; more starts do not find a better optimum.",
     "check": expect_nothing_written()},
    {"name": "config_num_chains_huge", "klass": C,
     "make": text_config("optimization: {cmc: {per_shard_mcmc: {num_chains: 1000000}}}\n"),
     "rc": 2, "needles": ["per_shard_mcmc.num_chains: '1000000' is not allowed", "1 to 1024"],
     "fix": "num_chains is at most 1024 (num_warmup and num_samples at most 10^6)."},
    {"name": "config_fourier_order_huge", "klass": C,
     "make": text_config("optimization: {nlsq: {anti_degeneracy: "
                         "{fourier_order: 2147483647}}}\n"),
     "rc": 2, "needles": ["anti_degeneracy.fourier_order", "1 to 64"],
     "fix": "fourier_order is at most 64 (it needs 2·order + 1 angles)."},
    {"name": "config_nul_in_path", "klass": C,
     "make": text_config('experimental_data: {file_path: "data.h5\\0"}\n'),
     "rc": 2, "needles": ["a NUL character", "cfg.yaml:2"],
     "fix": "Remove the \\0 from the string: no path or value may hold a NUL character."},
    {"name": "config_nul_in_key", "klass": C,
     "make": text_config('"analyzer_parameters\\0x": {dt: 0.1}\n'),
     "rc": 2, "needles": ["a NUL character", "cfg.yaml:2"],
     "fix": "Remove the \\0 from the key."},
    {"name": "config_nul_byte", "klass": C,
     "make": text_config(b"#\0\n", command="nlsq", data=True),
     "rc": 2, "needles": ["config file holds a NUL byte (not text)", "cfg.yaml:2"],
     "fix": "Remove the NUL byte: a config is text (a file saved by another program, or "
            "cut short, may hold one).",
     "check": expect_nothing_written()},
    {"name": "threads_out_of_range", "klass": C,
     "make": text_config("", command="nlsq", data=True, extra=["--threads", "100000"]),
     "rc": 2, "needles": ["--threads: '100000' is not allowed", "1 to 1024"],
     "fix": "--threads takes a whole number from 1 to 1024."},
    {"name": "rings_angle_starts_per_ring", "klass": C,
     "make": rings_angle_starts("nlsq"), "check": expect_nothing_written(),
     "rc": 2, "needles": ["per_angle_scaling.contrast: 2 values given",
                          "ring q 0.02 1/A keeps 1 angles"],
     "fix": "A per_angle_scaling list applies to every selected ring: give one value, or "
            "select rings that keep as many angles (`xpcsfit validate` shows each ring's)."},
    {"name": "rings_angle_starts_validate", "klass": C,
     "make": rings_angle_starts("validate"),
     "rc": 2, "needles": ["per_angle_scaling.contrast: 2 values given",
                          "ring q 0.02 1/A keeps 1 angles"],
     "fix": "validate checks each ring's plan as its fit would: give one value, or select "
            "rings that keep as many angles."},
]
