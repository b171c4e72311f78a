"""`benchbook synth pair -o DIR`: a pre/post capture pair with known per-packet truth.

Writes DIR/pre.pcap, DIR/post.pcap (nanosecond pcap, Ethernet/IPv4/UDP frames with a 64-bit
little-endian packet id at frame offset 42) and DIR/truth.json (what `benchbook latency` must find:
counts and the latency model), so the latency pipeline can be tried without a testbed:

    benchbook synth pair -o pair
    benchbook latency pair/pre.pcap pair/post.pcap -o pair/out --id-offset 42
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

synth_app = typer.Typer(help="Generate test inputs with known truth.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.add_typer(synth_app, name="synth")


@synth_app.command("pair")
def pair(
    out: Path = typer.Option(..., "-o", "--out", help="output directory (created)"),
    packets: int = typer.Option(100_000, "--packets", min=1, help="packets in the pre capture"),
    rate_pps: float = typer.Option(100_000.0, "--rate-pps", min=1.0, help="constant sending rate"),
    base_latency_ns: int = typer.Option(5_000, "--base-latency-ns", min=1, help="smallest latency"),
    tail_mean_ns: float = typer.Option(500.0, "--tail-mean-ns", min=0.0, help="mean of the exponential tail"),
    loss: float = typer.Option(0.001, "--loss", min=0.0, max=1.0, help="fraction of packets lost"),
    duplicate: float = typer.Option(0.0, "--duplicate", min=0.0, max=1.0, help="fraction duplicated"),
    reorder: float = typer.Option(0.0, "--reorder", min=0.0, max=1.0, help="fraction held back and reordered"),
    frame_size: int = typer.Option(64, "--frame-size", min=64, max=9018, help="bytes per frame (incl. FCS)"),
    seed: int = typer.Option(0, "--seed", help="random seed (same seed, same captures)"),
) -> None:
    """Write pre.pcap, post.pcap and truth.json into OUT."""
    from benchbook.capture.synth import ETH_IP_UDP, LatencyModel, make_capture_pair

    if out.exists() and not out.is_dir():
        typer.echo(f"benchbook: {out}: exists and is not a directory", err=True)
        raise typer.Exit(2)
    out.mkdir(parents=True, exist_ok=True)
    model = LatencyModel(base_ns=base_latency_ns, tail_mean_ns=tail_mean_ns)
    pre, post = out / "pre.pcap", out / "post.pcap"
    tmp_pre, tmp_post = out / ".pre.pcap.part", out / ".post.pcap.part"
    truth = make_capture_pair(tmp_pre, tmp_post, packets, rate_pps=rate_pps, latency=model, loss=loss,
                              duplicate=duplicate, reorder=reorder, frame_size=frame_size, seed=seed,
                              keep_arrays=False)
    tmp_pre.replace(pre)
    tmp_post.replace(post)
    doc = {
        "pre": str(pre), "post": str(post), "id_offset": ETH_IP_UDP, "id_width": truth.id_width,
        "id_byte_order": "little", "counts": truth.counts(), "rate_pps": rate_pps, "frame_size": frame_size,
        "latency_model": {"base_ns": base_latency_ns, "tail_mean_ns": tail_mean_ns,
                          "spike_prob": model.spike_prob, "spike_ns": model.spike_ns},
        "seed": seed,
    }
    tmp = out / ".truth.json.part"
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    tmp.replace(out / "truth.json")
    c = truth.counts()
    typer.echo(f"wrote {pre} ({c['pre']} packets), {post} ({c['post']} packets), {out / 'truth.json'}")
    typer.echo(f"truth: matched {c['matched']}, lost {c['lost']}, duplicates {c['duplicates']}, "
               f"reordered {c['reordered']}")
    typer.echo(f"next: benchbook latency {pre} {post} -o {out / 'latency'} --id-offset {ETH_IP_UDP}")
