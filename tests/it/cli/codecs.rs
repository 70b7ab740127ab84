//! drivegen's JPEGs against Pillow's (libjpeg-turbo, what the Python tools we replace write):
//! the same pixels and quality give the same bytes. And `drivegen bench codecs` prints its
//! side-by-side table with the reference.

use std::process::Command;

use crate::common::{self, cli, random::Rng};

#[test]
fn jpegs_are_the_bytes_pillow_writes() {
    let Some(py) = common::oracle::python("interop") else {
        return;
    };
    let seed = common::random::seed();
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let script = "import sys, hashlib, io\nfrom PIL import Image\n\
        for a in sys.argv[1:]:\n\
        \x20   path, w, h, q = a.split(':')\n\
        \x20   img = Image.frombytes('RGB', (int(w), int(h)), open(path, 'rb').read())\n\
        \x20   b = io.BytesIO(); img.save(b, 'JPEG', quality=int(q))\n\
        \x20   print(hashlib.sha256(b.getvalue()).hexdigest())\n";
    let mut args = Vec::new();
    let mut want = Vec::new();
    for k in 0..6 {
        // Odd sizes (partial MCUs), noise, flat areas and edges, several qualities.
        let (w, h) = (1 + rng.below(300) as usize, 1 + rng.below(200) as usize);
        let q = [95u8, 85, 75, 50, 100, 1][k];
        let flat = rng.chance(0.5);
        let rgb: Vec<u8> = (0..w * h * 3)
            .map(|i| {
                if flat {
                    ((i / 3 % w) * 255 / w.max(1)) as u8 / 32 * 32
                } else {
                    rng.below(256) as u8
                }
            })
            .collect();
        let f = dir.path().join(format!("{k}.rgb"));
        std::fs::write(&f, &rgb).unwrap();
        args.push(format!("{}:{w}:{h}:{q}", f.display()));
        let jpeg = drivegen::jpeg::encode(&rgb, w, h, q).unwrap();
        want.push((
            format!("{w}×{h} q{q}"),
            format!("{:x}", <sha2::Sha256 as sha2::Digest>::digest(&jpeg)),
        ));
    }
    let out = Command::new(&py)
        .arg("-c")
        .arg(script)
        .args(&args)
        .output()
        .unwrap();
    let text = cli::ok(out, "Pillow");
    let got: Vec<&str> = text.lines().collect();
    assert_eq!(got.len(), want.len(), "seed {seed}");
    for ((what, mine), theirs) in want.iter().zip(got) {
        assert_eq!(
            mine, theirs,
            "{what}: drivegen's JPEG differs from Pillow's (seed {seed})"
        );
    }
}

#[test]
fn bench_codecs_prints_the_table_beside_pillow() {
    let Some(py) = common::oracle::python("interop") else {
        return;
    };
    let py = py.display().to_string();
    let out = cli::drivegen(
        &[
            "bench", "codecs", "--width", "64", "--height", "48", "--python", &py,
        ],
        &[],
    );
    for picture in ["flat", "textured"] {
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("| {picture} |")))
            .unwrap_or_else(|| panic!("no {picture} row in\n{out}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // drivegen and Pillow rates are numbers, and the JPEG bytes are the same.
        for c in [2, 3, 4] {
            assert!(cells[c].parse::<f64>().is_ok_and(|v| v > 0.0), "{row}");
        }
        assert_eq!(cells[7], "yes", "{row}");
    }
    assert!(out.contains("Pillow's libjpeg-turbo:"), "{out}");
}
